from google.protobuf import timestamp_pb2 as _timestamp_pb2
from tether_client._proto.tether.v1 import ensemble_pb2 as _ensemble_pb2
from tether_client._proto.tether.v1 import simulation_pb2 as _simulation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
FAILED: SessionStatus
READY: SessionStatus
RUNNING: SessionStatus
SESSION_STATUS_UNSPECIFIED: SessionStatus
SESSION_VIEW_BASIC: SessionView
SESSION_VIEW_FULL: SessionView
SESSION_VIEW_UNSPECIFIED: SessionView

class CoSimulateRequest(_message.Message):
    __slots__ = ["communication_step", "input_rates", "inputs", "on_failure", "restore_snapshot_id", "restore_state", "save_snapshot", "session_id", "snapshot_label", "write_through"]
    class OnFailure(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    class InputRatesEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class InputsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    COMMUNICATION_STEP_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    INPUT_RATES_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_ABORT: CoSimulateRequest.OnFailure
    ON_FAILURE_DISCARD: CoSimulateRequest.OnFailure
    ON_FAILURE_FIELD_NUMBER: _ClassVar[int]
    ON_FAILURE_UNSPECIFIED: CoSimulateRequest.OnFailure
    RESTORE_SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    RESTORE_STATE_FIELD_NUMBER: _ClassVar[int]
    SAVE_SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_LABEL_FIELD_NUMBER: _ClassVar[int]
    WRITE_THROUGH_FIELD_NUMBER: _ClassVar[int]
    communication_step: float
    input_rates: _containers.ScalarMap[str, float]
    inputs: _containers.ScalarMap[str, float]
    on_failure: CoSimulateRequest.OnFailure
    restore_snapshot_id: int
    restore_state: _simulation_pb2.SimulationState
    save_snapshot: bool
    session_id: str
    snapshot_label: str
    write_through: bool
    def __init__(self, session_id: _Optional[str] = ..., communication_step: _Optional[float] = ..., inputs: _Optional[_Mapping[str, float]] = ..., on_failure: _Optional[_Union[CoSimulateRequest.OnFailure, str]] = ..., save_snapshot: bool = ..., snapshot_label: _Optional[str] = ..., restore_snapshot_id: _Optional[int] = ..., write_through: bool = ..., restore_state: _Optional[_Union[_simulation_pb2.SimulationState, _Mapping]] = ..., input_rates: _Optional[_Mapping[str, float]] = ...) -> None: ...

class CoSimulateResponse(_message.Message):
    __slots__ = ["certificate", "discard_reason", "discarded", "frame", "last_successful_time", "snapshot"]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    DISCARDED_FIELD_NUMBER: _ClassVar[int]
    DISCARD_REASON_FIELD_NUMBER: _ClassVar[int]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    LAST_SUCCESSFUL_TIME_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_FIELD_NUMBER: _ClassVar[int]
    certificate: _simulation_pb2.Certificate
    discard_reason: str
    discarded: bool
    frame: _simulation_pb2.Frame
    last_successful_time: float
    snapshot: Snapshot
    def __init__(self, frame: _Optional[_Union[_simulation_pb2.Frame, _Mapping]] = ..., certificate: _Optional[_Union[_simulation_pb2.Certificate, _Mapping]] = ..., discarded: bool = ..., last_successful_time: _Optional[float] = ..., discard_reason: _Optional[str] = ..., snapshot: _Optional[_Union[Snapshot, _Mapping]] = ...) -> None: ...

class CreateSessionRequest(_message.Message):
    __slots__ = ["display_name", "spec"]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    display_name: str
    spec: _simulation_pb2.SimulationSpec
    def __init__(self, spec: _Optional[_Union[_simulation_pb2.SimulationSpec, _Mapping]] = ..., display_name: _Optional[str] = ...) -> None: ...

class CreateSnapshotRequest(_message.Message):
    __slots__ = ["label", "session_id"]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    label: str
    session_id: str
    def __init__(self, session_id: _Optional[str] = ..., label: _Optional[str] = ...) -> None: ...

class DeleteSessionRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class DeleteSessionResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class DeleteSnapshotRequest(_message.Message):
    __slots__ = ["session_id", "snapshot_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    snapshot_id: int
    def __init__(self, session_id: _Optional[str] = ..., snapshot_id: _Optional[int] = ...) -> None: ...

class DeleteSnapshotResponse(_message.Message):
    __slots__ = []
    def __init__(self) -> None: ...

class EvaluateRequest(_message.Message):
    __slots__ = ["inputs", "spec", "state"]
    class InputsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    inputs: _containers.ScalarMap[str, float]
    spec: _simulation_pb2.SimulationSpec
    state: _simulation_pb2.State
    def __init__(self, spec: _Optional[_Union[_simulation_pb2.SimulationSpec, _Mapping]] = ..., state: _Optional[_Union[_simulation_pb2.State, _Mapping]] = ..., inputs: _Optional[_Mapping[str, float]] = ...) -> None: ...

class EvaluateResponse(_message.Message):
    __slots__ = ["frame", "warnings"]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    frame: _simulation_pb2.Frame
    warnings: _containers.RepeatedCompositeFieldContainer[_simulation_pb2.Diagnostic]
    def __init__(self, frame: _Optional[_Union[_simulation_pb2.Frame, _Mapping]] = ..., warnings: _Optional[_Iterable[_Union[_simulation_pb2.Diagnostic, _Mapping]]] = ...) -> None: ...

class ExportSessionRequest(_message.Message):
    __slots__ = ["session_id", "snapshot_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    snapshot_id: int
    def __init__(self, session_id: _Optional[str] = ..., snapshot_id: _Optional[int] = ...) -> None: ...

class ExportSessionResponse(_message.Message):
    __slots__ = ["data", "step", "t"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    T_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    step: int
    t: float
    def __init__(self, data: _Optional[bytes] = ..., step: _Optional[int] = ..., t: _Optional[float] = ...) -> None: ...

class GetSessionRequest(_message.Message):
    __slots__ = ["session_id", "view"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    VIEW_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    view: SessionView
    def __init__(self, session_id: _Optional[str] = ..., view: _Optional[_Union[SessionView, str]] = ...) -> None: ...

class ImportSessionRequest(_message.Message):
    __slots__ = ["data", "display_name"]
    DATA_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    data: bytes
    display_name: str
    def __init__(self, data: _Optional[bytes] = ..., display_name: _Optional[str] = ...) -> None: ...

class ListSessionsRequest(_message.Message):
    __slots__ = ["page_size", "page_token"]
    PAGE_SIZE_FIELD_NUMBER: _ClassVar[int]
    PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    page_size: int
    page_token: str
    def __init__(self, page_size: _Optional[int] = ..., page_token: _Optional[str] = ...) -> None: ...

class ListSessionsResponse(_message.Message):
    __slots__ = ["next_page_token", "sessions"]
    NEXT_PAGE_TOKEN_FIELD_NUMBER: _ClassVar[int]
    SESSIONS_FIELD_NUMBER: _ClassVar[int]
    next_page_token: str
    sessions: _containers.RepeatedCompositeFieldContainer[Session]
    def __init__(self, sessions: _Optional[_Iterable[_Union[Session, _Mapping]]] = ..., next_page_token: _Optional[str] = ...) -> None: ...

class ListSnapshotsRequest(_message.Message):
    __slots__ = ["session_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    def __init__(self, session_id: _Optional[str] = ...) -> None: ...

class ListSnapshotsResponse(_message.Message):
    __slots__ = ["max_snapshots", "snapshots"]
    MAX_SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOTS_FIELD_NUMBER: _ClassVar[int]
    max_snapshots: int
    snapshots: _containers.RepeatedCompositeFieldContainer[Snapshot]
    def __init__(self, snapshots: _Optional[_Iterable[_Union[Snapshot, _Mapping]]] = ..., max_snapshots: _Optional[int] = ...) -> None: ...

class RestoreSnapshotRequest(_message.Message):
    __slots__ = ["session_id", "snapshot_id"]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    session_id: str
    snapshot_id: int
    def __init__(self, session_id: _Optional[str] = ..., snapshot_id: _Optional[int] = ...) -> None: ...

class RunEnsembleRequest(_message.Message):
    __slots__ = ["ensemble", "functions", "include_certificate", "output_interval", "reduce", "results_per_message", "session_id", "spec", "until_time"]
    ENSEMBLE_FIELD_NUMBER: _ClassVar[int]
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    REDUCE_FIELD_NUMBER: _ClassVar[int]
    RESULTS_PER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    UNTIL_TIME_FIELD_NUMBER: _ClassVar[int]
    ensemble: _ensemble_pb2.EnsembleSpec
    functions: _ensemble_pb2.EnsembleFunctions
    include_certificate: bool
    output_interval: float
    reduce: bool
    results_per_message: int
    session_id: str
    spec: _simulation_pb2.SimulationSpec
    until_time: float
    def __init__(self, spec: _Optional[_Union[_simulation_pb2.SimulationSpec, _Mapping]] = ..., session_id: _Optional[str] = ..., ensemble: _Optional[_Union[_ensemble_pb2.EnsembleSpec, _Mapping]] = ..., until_time: _Optional[float] = ..., include_certificate: bool = ..., results_per_message: _Optional[int] = ..., output_interval: _Optional[float] = ..., reduce: bool = ..., functions: _Optional[_Union[_ensemble_pb2.EnsembleFunctions, str]] = ...) -> None: ...

class RunEnsembleResponse(_message.Message):
    __slots__ = ["done", "functions", "reduction", "results", "seed", "total"]
    DONE_FIELD_NUMBER: _ClassVar[int]
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    REDUCTION_FIELD_NUMBER: _ClassVar[int]
    RESULTS_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    TOTAL_FIELD_NUMBER: _ClassVar[int]
    done: int
    functions: _ensemble_pb2.EnsembleFunctions
    reduction: _ensemble_pb2.EnsembleReduction
    results: _containers.RepeatedCompositeFieldContainer[_ensemble_pb2.EnsembleInstanceResult]
    seed: int
    total: int
    def __init__(self, results: _Optional[_Iterable[_Union[_ensemble_pb2.EnsembleInstanceResult, _Mapping]]] = ..., done: _Optional[int] = ..., total: _Optional[int] = ..., seed: _Optional[int] = ..., reduction: _Optional[_Union[_ensemble_pb2.EnsembleReduction, _Mapping]] = ..., functions: _Optional[_Union[_ensemble_pb2.EnsembleFunctions, str]] = ...) -> None: ...

class RunRequest(_message.Message):
    __slots__ = ["every", "frames_per_message", "include_certificate", "output_interval", "session_id", "steps", "until_time"]
    EVERY_FIELD_NUMBER: _ClassVar[int]
    FRAMES_PER_MESSAGE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    OUTPUT_INTERVAL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    UNTIL_TIME_FIELD_NUMBER: _ClassVar[int]
    every: int
    frames_per_message: int
    include_certificate: bool
    output_interval: float
    session_id: str
    steps: int
    until_time: float
    def __init__(self, session_id: _Optional[str] = ..., steps: _Optional[int] = ..., until_time: _Optional[float] = ..., every: _Optional[int] = ..., frames_per_message: _Optional[int] = ..., include_certificate: bool = ..., output_interval: _Optional[float] = ...) -> None: ...

class RunResponse(_message.Message):
    __slots__ = ["certificate", "frames"]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    certificate: _simulation_pb2.Certificate
    frames: _containers.RepeatedCompositeFieldContainer[_simulation_pb2.Frame]
    def __init__(self, frames: _Optional[_Iterable[_Union[_simulation_pb2.Frame, _Mapping]]] = ..., certificate: _Optional[_Union[_simulation_pb2.Certificate, _Mapping]] = ...) -> None: ...

class Session(_message.Message):
    __slots__ = ["constraints", "coordinates", "create_time", "display_name", "error", "frame", "id", "inputs", "memory_bytes", "outputs", "replica", "snapshot_count", "state", "status", "step", "update_time", "warnings"]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    COORDINATES_FIELD_NUMBER: _ClassVar[int]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FRAME_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    REPLICA_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_COUNT_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STATUS_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    UPDATE_TIME_FIELD_NUMBER: _ClassVar[int]
    WARNINGS_FIELD_NUMBER: _ClassVar[int]
    constraints: _containers.RepeatedScalarFieldContainer[str]
    coordinates: _containers.RepeatedScalarFieldContainer[str]
    create_time: _timestamp_pb2.Timestamp
    display_name: str
    error: str
    frame: _simulation_pb2.Frame
    id: str
    inputs: _containers.RepeatedScalarFieldContainer[str]
    memory_bytes: int
    outputs: _containers.RepeatedScalarFieldContainer[str]
    replica: str
    snapshot_count: int
    state: _simulation_pb2.State
    status: SessionStatus
    step: int
    update_time: _timestamp_pb2.Timestamp
    warnings: _containers.RepeatedCompositeFieldContainer[_simulation_pb2.Diagnostic]
    def __init__(self, id: _Optional[str] = ..., status: _Optional[_Union[SessionStatus, str]] = ..., state: _Optional[_Union[_simulation_pb2.State, _Mapping]] = ..., step: _Optional[int] = ..., error: _Optional[str] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., update_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., display_name: _Optional[str] = ..., coordinates: _Optional[_Iterable[str]] = ..., constraints: _Optional[_Iterable[str]] = ..., inputs: _Optional[_Iterable[str]] = ..., outputs: _Optional[_Iterable[str]] = ..., warnings: _Optional[_Iterable[_Union[_simulation_pb2.Diagnostic, _Mapping]]] = ..., snapshot_count: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., frame: _Optional[_Union[_simulation_pb2.Frame, _Mapping]] = ..., replica: _Optional[str] = ...) -> None: ...

class Snapshot(_message.Message):
    __slots__ = ["create_time", "label", "session_id", "snapshot_id", "step", "t"]
    CREATE_TIME_FIELD_NUMBER: _ClassVar[int]
    LABEL_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    T_FIELD_NUMBER: _ClassVar[int]
    create_time: _timestamp_pb2.Timestamp
    label: str
    session_id: str
    snapshot_id: int
    step: int
    t: float
    def __init__(self, session_id: _Optional[str] = ..., snapshot_id: _Optional[int] = ..., step: _Optional[int] = ..., t: _Optional[float] = ..., create_time: _Optional[_Union[_timestamp_pb2.Timestamp, _Mapping]] = ..., label: _Optional[str] = ...) -> None: ...

class UpdateSessionRequest(_message.Message):
    __slots__ = ["baumgarte", "certificate", "constraint_gains", "input_defaults", "inputs", "parameters", "session_id", "state"]
    class ConstraintGainsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: _simulation_pb2.Baumgarte
        def __init__(self, key: _Optional[str] = ..., value: _Optional[_Union[_simulation_pb2.Baumgarte, _Mapping]] = ...) -> None: ...
    class InputDefaultsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class InputsEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    class ParametersEntry(_message.Message):
        __slots__ = ["key", "value"]
        KEY_FIELD_NUMBER: _ClassVar[int]
        VALUE_FIELD_NUMBER: _ClassVar[int]
        key: str
        value: float
        def __init__(self, key: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...
    BAUMGARTE_FIELD_NUMBER: _ClassVar[int]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINT_GAINS_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    INPUT_DEFAULTS_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    SESSION_ID_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    baumgarte: _simulation_pb2.Baumgarte
    certificate: _simulation_pb2.CertificateOptions
    constraint_gains: _containers.MessageMap[str, _simulation_pb2.Baumgarte]
    input_defaults: _containers.ScalarMap[str, float]
    inputs: _containers.ScalarMap[str, float]
    parameters: _containers.ScalarMap[str, float]
    session_id: str
    state: _simulation_pb2.State
    def __init__(self, session_id: _Optional[str] = ..., parameters: _Optional[_Mapping[str, float]] = ..., input_defaults: _Optional[_Mapping[str, float]] = ..., baumgarte: _Optional[_Union[_simulation_pb2.Baumgarte, _Mapping]] = ..., constraint_gains: _Optional[_Mapping[str, _simulation_pb2.Baumgarte]] = ..., inputs: _Optional[_Mapping[str, float]] = ..., state: _Optional[_Union[_simulation_pb2.State, _Mapping]] = ..., certificate: _Optional[_Union[_simulation_pb2.CertificateOptions, _Mapping]] = ...) -> None: ...

class ValidateRequest(_message.Message):
    __slots__ = ["spec"]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    spec: _simulation_pb2.SimulationSpec
    def __init__(self, spec: _Optional[_Union[_simulation_pb2.SimulationSpec, _Mapping]] = ...) -> None: ...

class ValidateResponse(_message.Message):
    __slots__ = ["report"]
    REPORT_FIELD_NUMBER: _ClassVar[int]
    report: _simulation_pb2.ValidationReport
    def __init__(self, report: _Optional[_Union[_simulation_pb2.ValidationReport, _Mapping]] = ...) -> None: ...

class SessionStatus(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []

class SessionView(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
