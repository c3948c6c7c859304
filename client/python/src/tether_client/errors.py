"""Errors of the Tether client: TetherError for a failed call, with the
google.rpc details the server attaches decoded by the generated messages."""

from __future__ import annotations

from typing import Any, Callable, List, Optional, Sequence, Tuple, TypeVar

import grpc
from google.protobuf import message as _message

from tether_client._proto.google.rpc import error_details_pb2, status_pb2

__all__ = ["TetherError", "decode_error_subjects", "decode_field_violations"]

#: (field path, description) of a google.rpc.BadRequest field violation,
#: e.g. ("spec.system.constraints[0].expression", "unknown name 'z' ...").
FieldViolation = Tuple[str, str]
#: (detail, type, name, description): what a NOT_FOUND, FAILED_PRECONDITION
#: or RESOURCE_EXHAUSTED is about (see decode_error_subjects).
ErrorSubject = Tuple[str, str, str, str]

_STATUS_DETAILS_KEY = "grpc-status-details-bin"


def _status(status_details: bytes) -> Optional[status_pb2.Status]:
    try:
        return status_pb2.Status.FromString(status_details)
    except _message.DecodeError:
        return None


def decode_field_violations(status_details: bytes) -> List[FieldViolation]:
    """The google.rpc.BadRequest field violations in a serialized
    google.rpc.Status (the ``grpc-status-details-bin`` trailer): a list of
    (field, description). Undecodable bytes give an empty list."""
    status = _status(status_details)
    violations: List[FieldViolation] = []
    for detail in status.details if status else ():
        request = error_details_pb2.BadRequest()
        if detail.Unpack(request):
            violations.extend((v.field, v.description)
                              for v in request.field_violations)
    return violations


def decode_error_subjects(status_details: bytes) -> List[ErrorSubject]:
    """What a NOT_FOUND, FAILED_PRECONDITION or RESOURCE_EXHAUSTED is about:
    (detail, type, name, description) tuples from the google.rpc
    ResourceInfo (resource_type, resource_name, description),
    PreconditionFailure (type, subject, description of each violation) and
    QuotaFailure (subject, description; type empty) details of a serialized
    google.rpc.Status. ``detail`` is the message's name."""
    status = _status(status_details)
    subjects: List[ErrorSubject] = []
    for detail in status.details if status else ():
        resource = error_details_pb2.ResourceInfo()
        precondition = error_details_pb2.PreconditionFailure()
        quota = error_details_pb2.QuotaFailure()
        if detail.Unpack(resource):
            subjects.append(("ResourceInfo", resource.resource_type,
                             resource.resource_name, resource.description))
        elif detail.Unpack(precondition):
            subjects.extend(("PreconditionFailure", v.type, v.subject,
                             v.description) for v in precondition.violations)
        elif detail.Unpack(quota):
            subjects.extend(("QuotaFailure", "", v.subject, v.description)
                            for v in quota.violations)
    return subjects


class TetherError(grpc.RpcError):
    """A failed call.

    ``code`` is the grpc.StatusCode, ``message`` the server's message,
    ``field_violations`` the google.rpc.BadRequest (field, description)
    pairs (field is the request's path, "spec.system.constraints[0]
    .expression"), ``error_subjects`` what the error is about
    (decode_error_subjects). TetherError is a grpc.RpcError, so code that
    catches those catches it; ``code()`` and ``details()`` are not
    methods here but attributes. ``partial`` is what a
    stream delivered before it failed, where a call says so
    (Client.run_ensemble: an EnsembleResult of the instances received, in
    order; RunStream.result: a Trajectory of the frames received; None
    otherwise), so that no result the server sent is lost. It is built
    from what was received when first read, not when the error is raised:
    an ensemble of 50 000 instances of 10 000 frames took 17 s to turn into
    arrays, which the call's timeout did not cover."""

    def __init__(self, code: grpc.StatusCode, message: str,
                 field_violations: Sequence[FieldViolation] = (),
                 error_subjects: Sequence[ErrorSubject] = ()) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.field_violations = list(field_violations)
        self.error_subjects = list(error_subjects)
        self._partial: Any = None
        self._build_partial: Optional[Callable[[], Any]] = None

    @property
    def partial(self) -> Any:
        if self._build_partial is not None:
            self._partial, self._build_partial = self._build_partial(), None
        return self._partial

    @partial.setter
    def partial(self, value: Any) -> None:
        self._partial, self._build_partial = value, None

    def set_partial_lazily(self, build: Callable[[], Any]) -> None:
        """``partial`` becomes ``build()``, called when it is first read."""
        self._partial, self._build_partial = None, build

    @classmethod
    def from_rpc_error(cls, error: grpc.RpcError) -> "TetherError":
        """The TetherError of a grpc.RpcError raised by a stub call."""
        code = error.code() if hasattr(error, "code") else grpc.StatusCode.UNKNOWN
        message = error.details() if hasattr(error, "details") else str(error)
        violations: List[FieldViolation] = []
        subjects: List[ErrorSubject] = []
        trailers = (error.trailing_metadata()
                    if hasattr(error, "trailing_metadata") else None)
        for key, value in trailers or ():
            if key == _STATUS_DETAILS_KEY:
                violations = decode_field_violations(value)
                subjects = decode_error_subjects(value)
        return cls(code, message or "", violations, subjects)

    def __str__(self) -> str:
        name = (self.code.name if isinstance(self.code, grpc.StatusCode)
                else str(self.code))
        lines = ["%s: %s" % (name, self.message)]
        for field, description in self.field_violations:
            line = "%s: %s" % (field, description)
            if line not in self.message:
                lines.append("  " + line)
        return "\n".join(lines)


Explain = Callable[[TetherError], TetherError]
_R = TypeVar("_R")


def _unchanged(error: TetherError) -> TetherError:
    return error


def call(method: Callable[..., _R], request: object,
         explain: Explain = _unchanged, **kwargs: object) -> _R:
    """method(request, **kwargs), a grpc.RpcError raised as a TetherError
    (``explain`` may add what the client knows: Client._explain)."""
    try:
        return method(request, **kwargs)
    except grpc.RpcError as error:
        raise explain(TetherError.from_rpc_error(error)) from None
