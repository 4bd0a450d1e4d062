"""Object names as an API server validates them (DNS-1123), for data that never went through one.

A dump is data: a pod called `p/q[0]` is still reported, with a note that an API server would
have refused it. Messages are upstream's (apimachinery `validation.IsDNS1123Subdomain` /
`IsDNS1123Label`), so the note reads as `kubectl apply` would have answered.
"""

from __future__ import annotations

import re

DNS1123_LABEL = r"[a-z0-9]([-a-z0-9]*[a-z0-9])?"
DNS1123_SUBDOMAIN = DNS1123_LABEL + r"(\." + DNS1123_LABEL + r")*"
DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253

_LABEL = re.compile(rf"^{DNS1123_LABEL}$")
_SUBDOMAIN = re.compile(rf"^{DNS1123_SUBDOMAIN}$")

# upstream: apimachinery/pkg/util/validation dns1123LabelErrMsg / dns1123SubdomainErrorMsg
_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start "
              f"and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
              f"'{DNS1123_LABEL}')")
_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and "
                  "must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
                  f"is '{DNS1123_SUBDOMAIN}')")


def is_dns1123_subdomain(value: str) -> bool:
    return len(value) <= DNS1123_SUBDOMAIN_MAX and bool(_SUBDOMAIN.match(value))


def dns1123_subdomain_errors(value: str) -> list[str]:
    """upstream IsDNS1123Subdomain: what is wrong with `value` as a pod, node or other object name."""
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(f"must be no more than {DNS1123_SUBDOMAIN_MAX} characters")
    if not _SUBDOMAIN.match(value):
        errs.append(_SUBDOMAIN_MSG)
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    """upstream IsDNS1123Label: what is wrong with `value` as a namespace name."""
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(f"must be no more than {DNS1123_LABEL_MAX} characters")
    if not _LABEL.match(value):
        errs.append(_LABEL_MSG)
    return errs


def invalid_name_note(kind: str, namespace: str | None, name: str) -> str | None:
    """One sentence when an API server would refuse this object's namespace or name, else None.

    upstream: ValidatePodName / ValidateNodeName are NameIsDNSSubdomain; namespaces are DNS-1123 labels."""
    problems = []
    if namespace is not None:
        problems += [f"namespace {namespace!r}: {e}" for e in dns1123_label_errors(namespace)]
    problems += [f"name {name!r}: {e}" for e in dns1123_subdomain_errors(name)]
    if not problems:
        return None
    return (f"invalid {kind} name, an API server would refuse it ({'; '.join(problems)}); "
            "reported as the input has it")
