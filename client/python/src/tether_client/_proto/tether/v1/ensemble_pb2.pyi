from tether_client._proto.tether.v1 import simulation_pb2 as _simulation_pb2
from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor
ENSEMBLE_FUNCTIONS_EXACT: EnsembleFunctions
ENSEMBLE_FUNCTIONS_FAST: EnsembleFunctions
ENSEMBLE_FUNCTIONS_UNSPECIFIED: EnsembleFunctions

class EnsembleCertificateSummary(_message.Message):
    __slots__ = ["feedback_verified", "initial_consistent", "max_position_residual", "max_velocity_residual", "position_bound", "step_stable", "steps"]
    FEEDBACK_VERIFIED_FIELD_NUMBER: _ClassVar[int]
    INITIAL_CONSISTENT_FIELD_NUMBER: _ClassVar[int]
    MAX_POSITION_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_VELOCITY_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STEP_STABLE_FIELD_NUMBER: _ClassVar[int]
    feedback_verified: bool
    initial_consistent: bool
    max_position_residual: float
    max_velocity_residual: float
    position_bound: float
    step_stable: bool
    steps: int
    def __init__(self, initial_consistent: bool = ..., feedback_verified: bool = ..., step_stable: bool = ..., max_position_residual: _Optional[float] = ..., max_velocity_residual: _Optional[float] = ..., position_bound: _Optional[float] = ..., steps: _Optional[int] = ...) -> None: ...

class EnsembleDistribution(_message.Message):
    __slots__ = ["a", "b", "kind", "name"]
    class Kind(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    A_FIELD_NUMBER: _ClassVar[int]
    B_FIELD_NUMBER: _ClassVar[int]
    KIND_FIELD_NUMBER: _ClassVar[int]
    KIND_UNSPECIFIED: EnsembleDistribution.Kind
    NAME_FIELD_NUMBER: _ClassVar[int]
    NORMAL: EnsembleDistribution.Kind
    UNIFORM: EnsembleDistribution.Kind
    a: float
    b: float
    kind: EnsembleDistribution.Kind
    name: str
    def __init__(self, name: _Optional[str] = ..., kind: _Optional[_Union[EnsembleDistribution.Kind, str]] = ..., a: _Optional[float] = ..., b: _Optional[float] = ...) -> None: ...

class EnsembleInstance(_message.Message):
    __slots__ = ["values"]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    values: _containers.RepeatedCompositeFieldContainer[EnsembleValue]
    def __init__(self, values: _Optional[_Iterable[_Union[EnsembleValue, _Mapping]]] = ...) -> None: ...

class EnsembleInstanceResult(_message.Message):
    __slots__ = ["certificate", "error", "failed_step", "failed_time", "fast_functions", "final_state", "frames", "index", "ok", "seed", "steps", "values"]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    FAILED_STEP_FIELD_NUMBER: _ClassVar[int]
    FAILED_TIME_FIELD_NUMBER: _ClassVar[int]
    FAST_FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    FINAL_STATE_FIELD_NUMBER: _ClassVar[int]
    FRAMES_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    OK_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    certificate: EnsembleCertificateSummary
    error: str
    failed_step: int
    failed_time: float
    fast_functions: bool
    final_state: _simulation_pb2.State
    frames: _containers.RepeatedCompositeFieldContainer[_simulation_pb2.Frame]
    index: int
    ok: bool
    seed: int
    steps: int
    values: _containers.RepeatedCompositeFieldContainer[EnsembleValue]
    def __init__(self, index: _Optional[int] = ..., values: _Optional[_Iterable[_Union[EnsembleValue, _Mapping]]] = ..., ok: bool = ..., error: _Optional[str] = ..., failed_step: _Optional[int] = ..., failed_time: _Optional[float] = ..., final_state: _Optional[_Union[_simulation_pb2.State, _Mapping]] = ..., steps: _Optional[int] = ..., certificate: _Optional[_Union[EnsembleCertificateSummary, _Mapping]] = ..., seed: _Optional[int] = ..., frames: _Optional[_Iterable[_Union[_simulation_pb2.Frame, _Mapping]]] = ..., fast_functions: bool = ...) -> None: ...

class EnsembleReduction(_message.Message):
    __slots__ = ["columns", "count", "max", "mean", "min", "std", "t"]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    MAX_FIELD_NUMBER: _ClassVar[int]
    MEAN_FIELD_NUMBER: _ClassVar[int]
    MIN_FIELD_NUMBER: _ClassVar[int]
    STD_FIELD_NUMBER: _ClassVar[int]
    T_FIELD_NUMBER: _ClassVar[int]
    columns: _containers.RepeatedScalarFieldContainer[str]
    count: _containers.RepeatedScalarFieldContainer[int]
    max: _containers.RepeatedScalarFieldContainer[float]
    mean: _containers.RepeatedScalarFieldContainer[float]
    min: _containers.RepeatedScalarFieldContainer[float]
    std: _containers.RepeatedScalarFieldContainer[float]
    t: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, t: _Optional[_Iterable[float]] = ..., count: _Optional[_Iterable[int]] = ..., columns: _Optional[_Iterable[str]] = ..., mean: _Optional[_Iterable[float]] = ..., std: _Optional[_Iterable[float]] = ..., min: _Optional[_Iterable[float]] = ..., max: _Optional[_Iterable[float]] = ...) -> None: ...

class EnsembleSpec(_message.Message):
    __slots__ = ["instances", "random", "random_count", "seed", "sweeps"]
    INSTANCES_FIELD_NUMBER: _ClassVar[int]
    RANDOM_COUNT_FIELD_NUMBER: _ClassVar[int]
    RANDOM_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    SWEEPS_FIELD_NUMBER: _ClassVar[int]
    instances: _containers.RepeatedCompositeFieldContainer[EnsembleInstance]
    random: _containers.RepeatedCompositeFieldContainer[EnsembleDistribution]
    random_count: int
    seed: int
    sweeps: _containers.RepeatedCompositeFieldContainer[EnsembleSweep]
    def __init__(self, instances: _Optional[_Iterable[_Union[EnsembleInstance, _Mapping]]] = ..., sweeps: _Optional[_Iterable[_Union[EnsembleSweep, _Mapping]]] = ..., random: _Optional[_Iterable[_Union[EnsembleDistribution, _Mapping]]] = ..., random_count: _Optional[int] = ..., seed: _Optional[int] = ...) -> None: ...

class EnsembleSweep(_message.Message):
    __slots__ = ["count", "name", "start", "stop"]
    COUNT_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    START_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    count: int
    name: str
    start: float
    stop: float
    def __init__(self, name: _Optional[str] = ..., start: _Optional[float] = ..., stop: _Optional[float] = ..., count: _Optional[int] = ...) -> None: ...

class EnsembleValue(_message.Message):
    __slots__ = ["name", "value"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...

class EnsembleFunctions(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
    __slots__ = []
