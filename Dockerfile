# kubegpu serve in a container: the dashboard and Prometheus exporter (deploy/helm/kubegpu runs it).
# Build: docker build -t ghcr.io/kubegpu/kubegpu:0.1.0 .
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY src ./src
RUN pip install --no-cache-dir --prefix=/install .

FROM python:3.11-slim
COPY --from=build /install /usr/local
# matplotlib and Python caches write under /tmp (an emptyDir in the chart; the root filesystem is read-only)
ENV MPLCONFIGDIR=/tmp/matplotlib PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["kubegpu"]
CMD ["serve", "--address=0.0.0.0", "--port=8080"]
