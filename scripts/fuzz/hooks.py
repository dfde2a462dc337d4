# Schemathesis hooks for scripts/fuzz.sh: the fuzzer plays a client that does what the API asks of every client.
# Loaded through SCHEMATHESIS_HOOKS; see docs/decisions/0012-cross-field-rules-in-the-contracts.md.
import uuid

import schemathesis
from hypothesis import strategies as st

# `format: phone` (lead and agent phone numbers): numbers that exist in their numbering plan, in the notations the
# API accepts. Which digit strings are real numbers is the plan's business (libphonenumber), not a pattern's.
schemathesis.openapi.format(
    "phone",
    st.sampled_from(
        [
            "(512) 555-0142",
            "512-555-0100",
            "+1 512 555 0150",
            "+15125550199",
            "+44 20 7946 0958",
            "+49 30 901820",
            "+33 1 42 68 53 00",
        ]
    ),
)


@schemathesis.hook
def before_call(context, case, **kwargs):
    # A client sends a new Idempotency-Key with every new request body; the same key with another body is refused
    # (422 idempotency_key_reused) by design. A key of a valid length stays one; an invalid one is left as generated.
    # Negative cases are refused anyway; editing them would make Schemathesis take them for positive ones.
    if case.meta is not None and case.meta.generation.mode.is_negative:
        return
    headers = case.headers or {}
    for name in list(headers):
        if name.lower() == "idempotency-key":
            value = headers[name]
            if isinstance(value, str) and 1 <= len(value) <= 255:
                headers[name] = str(uuid.uuid4())


def _has_prototype_key(value):
    if isinstance(value, dict):
        return any(k == "__proto__" or _has_prototype_key(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_prototype_key(v) for v in value)
    return False


@schemathesis.hook
def filter_body(context, body):
    # A `__proto__` key is refused in every JSON body (400 malformed_request: the parser guards against prototype
    # poisoning), also where a schema is free-form (a bulk item before it is validated, a record keyed by name).
    # No JSON Schema keyword can say "except this key" for every free-form object, so generated bodies leave it out
    # (test/security covers the refusal itself).
    return not _has_prototype_key(body)
