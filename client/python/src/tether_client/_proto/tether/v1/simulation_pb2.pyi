from google.protobuf.internal import containers as _containers
from google.protobuf.internal import enum_type_wrapper as _enum_type_wrapper
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from typing import ClassVar as _ClassVar, Iterable as _Iterable, Mapping as _Mapping, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class Baumgarte(_message.Message):
    __slots__ = ["alpha", "beta"]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    BETA_FIELD_NUMBER: _ClassVar[int]
    alpha: float
    beta: float
    def __init__(self, alpha: _Optional[float] = ..., beta: _Optional[float] = ...) -> None: ...

class Body(_message.Message):
    __slots__ = ["inertia", "inertial_origin", "mass", "name"]
    INERTIAL_ORIGIN_FIELD_NUMBER: _ClassVar[int]
    INERTIA_FIELD_NUMBER: _ClassVar[int]
    MASS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    inertia: Inertia
    inertial_origin: Pose
    mass: float
    name: str
    def __init__(self, name: _Optional[str] = ..., mass: _Optional[float] = ..., inertial_origin: _Optional[_Union[Pose, _Mapping]] = ..., inertia: _Optional[_Union[Inertia, _Mapping]] = ...) -> None: ...

class Certificate(_message.Message):
    __slots__ = ["accuracy_warning", "conditioning_warning", "constraints", "defect_bound", "defect_jumps", "defect_samples", "enclosure_pieces", "feedback_verified", "final_position_bound", "first_unenclosed_time", "initial_consistent", "initial_position_residual", "initial_velocity_residual", "kkt_backward_error", "kkt_backward_error_tolerance", "max_kkt_residual", "max_local_error_estimate", "max_method_error_estimate", "max_method_error_norm", "max_position_residual", "max_relative_kkt_residual", "max_step_size", "max_velocity_residual", "max_w_condition", "mode", "position_bound", "refuted_bounds", "sampling", "stability_margin", "step_stable", "steps", "supremum_position_bound", "t_end", "t_start", "unenclosed_steps", "worst_kkt_row", "worst_kkt_time", "worst_local_error_coordinate", "worst_local_error_time", "worst_method_error_coordinate", "worst_method_error_time", "worst_w_condition_constraints", "worst_w_condition_time"]
    ACCURACY_WARNING_FIELD_NUMBER: _ClassVar[int]
    CONDITIONING_WARNING_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    DEFECT_BOUND_FIELD_NUMBER: _ClassVar[int]
    DEFECT_JUMPS_FIELD_NUMBER: _ClassVar[int]
    DEFECT_SAMPLES_FIELD_NUMBER: _ClassVar[int]
    ENCLOSURE_PIECES_FIELD_NUMBER: _ClassVar[int]
    FEEDBACK_VERIFIED_FIELD_NUMBER: _ClassVar[int]
    FINAL_POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    FIRST_UNENCLOSED_TIME_FIELD_NUMBER: _ClassVar[int]
    INITIAL_CONSISTENT_FIELD_NUMBER: _ClassVar[int]
    INITIAL_POSITION_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    INITIAL_VELOCITY_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    KKT_BACKWARD_ERROR_FIELD_NUMBER: _ClassVar[int]
    KKT_BACKWARD_ERROR_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    MAX_KKT_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_LOCAL_ERROR_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    MAX_METHOD_ERROR_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    MAX_METHOD_ERROR_NORM_FIELD_NUMBER: _ClassVar[int]
    MAX_POSITION_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_RELATIVE_KKT_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_STEP_SIZE_FIELD_NUMBER: _ClassVar[int]
    MAX_VELOCITY_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_W_CONDITION_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    REFUTED_BOUNDS_FIELD_NUMBER: _ClassVar[int]
    SAMPLING_FIELD_NUMBER: _ClassVar[int]
    STABILITY_MARGIN_FIELD_NUMBER: _ClassVar[int]
    STEPS_FIELD_NUMBER: _ClassVar[int]
    STEP_STABLE_FIELD_NUMBER: _ClassVar[int]
    SUPREMUM_POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    T_END_FIELD_NUMBER: _ClassVar[int]
    T_START_FIELD_NUMBER: _ClassVar[int]
    UNENCLOSED_STEPS_FIELD_NUMBER: _ClassVar[int]
    WORST_KKT_ROW_FIELD_NUMBER: _ClassVar[int]
    WORST_KKT_TIME_FIELD_NUMBER: _ClassVar[int]
    WORST_LOCAL_ERROR_COORDINATE_FIELD_NUMBER: _ClassVar[int]
    WORST_LOCAL_ERROR_TIME_FIELD_NUMBER: _ClassVar[int]
    WORST_METHOD_ERROR_COORDINATE_FIELD_NUMBER: _ClassVar[int]
    WORST_METHOD_ERROR_TIME_FIELD_NUMBER: _ClassVar[int]
    WORST_W_CONDITION_CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    WORST_W_CONDITION_TIME_FIELD_NUMBER: _ClassVar[int]
    accuracy_warning: str
    conditioning_warning: bool
    constraints: _containers.RepeatedCompositeFieldContainer[ConstraintCertificate]
    defect_bound: float
    defect_jumps: _containers.RepeatedCompositeFieldContainer[DefectJump]
    defect_samples: int
    enclosure_pieces: int
    feedback_verified: bool
    final_position_bound: float
    first_unenclosed_time: float
    initial_consistent: bool
    initial_position_residual: float
    initial_velocity_residual: float
    kkt_backward_error: float
    kkt_backward_error_tolerance: float
    max_kkt_residual: float
    max_local_error_estimate: float
    max_method_error_estimate: float
    max_method_error_norm: float
    max_position_residual: float
    max_relative_kkt_residual: float
    max_step_size: float
    max_velocity_residual: float
    max_w_condition: float
    mode: CertificateOptions.Mode
    position_bound: float
    refuted_bounds: _containers.RepeatedScalarFieldContainer[str]
    sampling: str
    stability_margin: float
    step_stable: bool
    steps: int
    supremum_position_bound: float
    t_end: float
    t_start: float
    unenclosed_steps: int
    worst_kkt_row: str
    worst_kkt_time: float
    worst_local_error_coordinate: str
    worst_local_error_time: float
    worst_method_error_coordinate: str
    worst_method_error_time: float
    worst_w_condition_constraints: _containers.RepeatedScalarFieldContainer[str]
    worst_w_condition_time: float
    def __init__(self, t_start: _Optional[float] = ..., t_end: _Optional[float] = ..., steps: _Optional[int] = ..., initial_consistent: bool = ..., initial_position_residual: _Optional[float] = ..., initial_velocity_residual: _Optional[float] = ..., feedback_verified: bool = ..., max_kkt_residual: _Optional[float] = ..., max_relative_kkt_residual: _Optional[float] = ..., max_w_condition: _Optional[float] = ..., step_stable: bool = ..., stability_margin: _Optional[float] = ..., max_step_size: _Optional[float] = ..., max_position_residual: _Optional[float] = ..., max_velocity_residual: _Optional[float] = ..., defect_bound: _Optional[float] = ..., defect_samples: _Optional[int] = ..., position_bound: _Optional[float] = ..., final_position_bound: _Optional[float] = ..., sampling: _Optional[str] = ..., constraints: _Optional[_Iterable[_Union[ConstraintCertificate, _Mapping]]] = ..., kkt_backward_error: _Optional[float] = ..., kkt_backward_error_tolerance: _Optional[float] = ..., worst_kkt_row: _Optional[str] = ..., worst_kkt_time: _Optional[float] = ..., worst_w_condition_time: _Optional[float] = ..., worst_w_condition_constraints: _Optional[_Iterable[str]] = ..., conditioning_warning: bool = ..., defect_jumps: _Optional[_Iterable[_Union[DefectJump, _Mapping]]] = ..., mode: _Optional[_Union[CertificateOptions.Mode, str]] = ..., unenclosed_steps: _Optional[int] = ..., first_unenclosed_time: _Optional[float] = ..., enclosure_pieces: _Optional[int] = ..., supremum_position_bound: _Optional[float] = ..., max_local_error_estimate: _Optional[float] = ..., worst_local_error_coordinate: _Optional[str] = ..., worst_local_error_time: _Optional[float] = ..., accuracy_warning: _Optional[str] = ..., max_method_error_estimate: _Optional[float] = ..., worst_method_error_coordinate: _Optional[str] = ..., worst_method_error_time: _Optional[float] = ..., max_method_error_norm: _Optional[float] = ..., refuted_bounds: _Optional[_Iterable[str]] = ...) -> None: ...

class CertificateOptions(_message.Message):
    __slots__ = ["consistency_tolerance", "disabled", "kkt_tolerance", "mode", "samples_per_step", "skip_local_error_estimate", "step_doubling_estimate"]
    class Mode(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    CONSISTENCY_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    DISABLED_FIELD_NUMBER: _ClassVar[int]
    ENCLOSED: CertificateOptions.Mode
    KKT_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    MODE_FIELD_NUMBER: _ClassVar[int]
    MODE_UNSPECIFIED: CertificateOptions.Mode
    SAMPLED: CertificateOptions.Mode
    SAMPLES_PER_STEP_FIELD_NUMBER: _ClassVar[int]
    SKIP_LOCAL_ERROR_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    STEP_DOUBLING_ESTIMATE_FIELD_NUMBER: _ClassVar[int]
    consistency_tolerance: float
    disabled: bool
    kkt_tolerance: float
    mode: CertificateOptions.Mode
    samples_per_step: int
    skip_local_error_estimate: bool
    step_doubling_estimate: bool
    def __init__(self, disabled: bool = ..., samples_per_step: _Optional[int] = ..., consistency_tolerance: _Optional[float] = ..., kkt_tolerance: _Optional[float] = ..., mode: _Optional[_Union[CertificateOptions.Mode, str]] = ..., skip_local_error_estimate: bool = ..., step_doubling_estimate: bool = ...) -> None: ...

class Constraint(_message.Message):
    __slots__ = ["expression", "gains", "name"]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    GAINS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expression: str
    gains: Baumgarte
    name: str
    def __init__(self, name: _Optional[str] = ..., expression: _Optional[str] = ..., gains: _Optional[_Union[Baumgarte, _Mapping]] = ...) -> None: ...

class ConstraintCertificate(_message.Message):
    __slots__ = ["alpha", "beta", "bound_refuted", "convolution_position_bound", "defect_bound", "defect_deviation_bound", "defect_gain", "defect_jump_count", "final_position_bound", "gains_decay_rate", "homogeneous_bound", "initial_position_residual", "initial_velocity_residual", "max_position_residual", "max_velocity_residual", "name", "position_bound", "residual_decay_rate", "spectral_radius", "step_mean_defect_bound", "supremum_position_bound"]
    ALPHA_FIELD_NUMBER: _ClassVar[int]
    BETA_FIELD_NUMBER: _ClassVar[int]
    BOUND_REFUTED_FIELD_NUMBER: _ClassVar[int]
    CONVOLUTION_POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    DEFECT_BOUND_FIELD_NUMBER: _ClassVar[int]
    DEFECT_DEVIATION_BOUND_FIELD_NUMBER: _ClassVar[int]
    DEFECT_GAIN_FIELD_NUMBER: _ClassVar[int]
    DEFECT_JUMP_COUNT_FIELD_NUMBER: _ClassVar[int]
    FINAL_POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    GAINS_DECAY_RATE_FIELD_NUMBER: _ClassVar[int]
    HOMOGENEOUS_BOUND_FIELD_NUMBER: _ClassVar[int]
    INITIAL_POSITION_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    INITIAL_VELOCITY_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_POSITION_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    MAX_VELOCITY_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    RESIDUAL_DECAY_RATE_FIELD_NUMBER: _ClassVar[int]
    SPECTRAL_RADIUS_FIELD_NUMBER: _ClassVar[int]
    STEP_MEAN_DEFECT_BOUND_FIELD_NUMBER: _ClassVar[int]
    SUPREMUM_POSITION_BOUND_FIELD_NUMBER: _ClassVar[int]
    alpha: float
    beta: float
    bound_refuted: bool
    convolution_position_bound: float
    defect_bound: float
    defect_deviation_bound: float
    defect_gain: float
    defect_jump_count: int
    final_position_bound: float
    gains_decay_rate: float
    homogeneous_bound: float
    initial_position_residual: float
    initial_velocity_residual: float
    max_position_residual: float
    max_velocity_residual: float
    name: str
    position_bound: float
    residual_decay_rate: float
    spectral_radius: float
    step_mean_defect_bound: float
    supremum_position_bound: float
    def __init__(self, name: _Optional[str] = ..., alpha: _Optional[float] = ..., beta: _Optional[float] = ..., initial_position_residual: _Optional[float] = ..., initial_velocity_residual: _Optional[float] = ..., max_position_residual: _Optional[float] = ..., max_velocity_residual: _Optional[float] = ..., defect_bound: _Optional[float] = ..., homogeneous_bound: _Optional[float] = ..., defect_gain: _Optional[float] = ..., position_bound: _Optional[float] = ..., final_position_bound: _Optional[float] = ..., spectral_radius: _Optional[float] = ..., residual_decay_rate: _Optional[float] = ..., gains_decay_rate: _Optional[float] = ..., defect_jump_count: _Optional[int] = ..., supremum_position_bound: _Optional[float] = ..., convolution_position_bound: _Optional[float] = ..., step_mean_defect_bound: _Optional[float] = ..., defect_deviation_bound: _Optional[float] = ..., bound_refuted: bool = ...) -> None: ...

class DefectJump(_message.Message):
    __slots__ = ["constraint", "jump_factor", "t_end", "t_start"]
    CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    JUMP_FACTOR_FIELD_NUMBER: _ClassVar[int]
    T_END_FIELD_NUMBER: _ClassVar[int]
    T_START_FIELD_NUMBER: _ClassVar[int]
    constraint: str
    jump_factor: float
    t_end: float
    t_start: float
    def __init__(self, t_start: _Optional[float] = ..., t_end: _Optional[float] = ..., constraint: _Optional[str] = ..., jump_factor: _Optional[float] = ...) -> None: ...

class Definition(_message.Message):
    __slots__ = ["expression", "name"]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expression: str
    name: str
    def __init__(self, name: _Optional[str] = ..., expression: _Optional[str] = ...) -> None: ...

class DenseMass(_message.Message):
    __slots__ = ["expressions", "values"]
    EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    expressions: _containers.RepeatedScalarFieldContainer[str]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ..., expressions: _Optional[_Iterable[str]] = ...) -> None: ...

class Diagnostic(_message.Message):
    __slots__ = ["field", "message", "severity"]
    class Severity(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    ERROR: Diagnostic.Severity
    FIELD_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_FIELD_NUMBER: _ClassVar[int]
    SEVERITY_UNSPECIFIED: Diagnostic.Severity
    WARNING: Diagnostic.Severity
    field: str
    message: str
    severity: Diagnostic.Severity
    def __init__(self, severity: _Optional[_Union[Diagnostic.Severity, str]] = ..., field: _Optional[str] = ..., message: _Optional[str] = ...) -> None: ...

class DiagonalMass(_message.Message):
    __slots__ = ["expressions", "values"]
    EXPRESSIONS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    expressions: _containers.RepeatedScalarFieldContainer[str]
    values: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, values: _Optional[_Iterable[float]] = ..., expressions: _Optional[_Iterable[str]] = ...) -> None: ...

class Frame(_message.Message):
    __slots__ = ["a", "outputs", "q", "residuals", "step", "t", "v"]
    A_FIELD_NUMBER: _ClassVar[int]
    LAMBDA_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    Q_FIELD_NUMBER: _ClassVar[int]
    RESIDUALS_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    T_FIELD_NUMBER: _ClassVar[int]
    V_FIELD_NUMBER: _ClassVar[int]
    a: _containers.RepeatedScalarFieldContainer[float]
    outputs: _containers.RepeatedScalarFieldContainer[float]
    q: _containers.RepeatedScalarFieldContainer[float]
    residuals: Residuals
    step: int
    t: float
    v: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, step: _Optional[int] = ..., t: _Optional[float] = ..., q: _Optional[_Iterable[float]] = ..., v: _Optional[_Iterable[float]] = ..., a: _Optional[_Iterable[float]] = ..., residuals: _Optional[_Union[Residuals, _Mapping]] = ..., outputs: _Optional[_Iterable[float]] = ..., **kwargs) -> None: ...

class Inertia(_message.Message):
    __slots__ = ["ixx", "ixy", "ixz", "iyy", "iyz", "izz"]
    IXX_FIELD_NUMBER: _ClassVar[int]
    IXY_FIELD_NUMBER: _ClassVar[int]
    IXZ_FIELD_NUMBER: _ClassVar[int]
    IYY_FIELD_NUMBER: _ClassVar[int]
    IYZ_FIELD_NUMBER: _ClassVar[int]
    IZZ_FIELD_NUMBER: _ClassVar[int]
    ixx: float
    ixy: float
    ixz: float
    iyy: float
    iyz: float
    izz: float
    def __init__(self, ixx: _Optional[float] = ..., ixy: _Optional[float] = ..., ixz: _Optional[float] = ..., iyy: _Optional[float] = ..., iyz: _Optional[float] = ..., izz: _Optional[float] = ...) -> None: ...

class Input(_message.Message):
    __slots__ = ["default_value", "name"]
    DEFAULT_VALUE_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    default_value: float
    name: str
    def __init__(self, name: _Optional[str] = ..., default_value: _Optional[float] = ...) -> None: ...

class IntegratorSpec(_message.Message):
    __slots__ = ["atol", "max_newton_iterations", "max_step", "method", "newton_tolerance", "rtol", "step_size"]
    class Method(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    ATOL_FIELD_NUMBER: _ClassVar[int]
    DOPRI5: IntegratorSpec.Method
    EXPLICIT_EULER: IntegratorSpec.Method
    MAX_NEWTON_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    MAX_STEP_FIELD_NUMBER: _ClassVar[int]
    METHOD_FIELD_NUMBER: _ClassVar[int]
    METHOD_UNSPECIFIED: IntegratorSpec.Method
    NEWTON_TOLERANCE_FIELD_NUMBER: _ClassVar[int]
    RADAU_IIA: IntegratorSpec.Method
    RK4: IntegratorSpec.Method
    RK4_POST_STABILIZED: IntegratorSpec.Method
    RTOL_FIELD_NUMBER: _ClassVar[int]
    SDIRK3: IntegratorSpec.Method
    SEMI_IMPLICIT_EULER: IntegratorSpec.Method
    STEP_SIZE_FIELD_NUMBER: _ClassVar[int]
    atol: float
    max_newton_iterations: int
    max_step: float
    method: IntegratorSpec.Method
    newton_tolerance: float
    rtol: float
    step_size: float
    def __init__(self, method: _Optional[_Union[IntegratorSpec.Method, str]] = ..., step_size: _Optional[float] = ..., rtol: _Optional[float] = ..., atol: _Optional[float] = ..., max_step: _Optional[float] = ..., newton_tolerance: _Optional[float] = ..., max_newton_iterations: _Optional[int] = ...) -> None: ...

class Joint(_message.Message):
    __slots__ = ["actuator_input", "axis", "child", "damping", "name", "origin", "parent", "spring", "type"]
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    ACTUATOR_INPUT_FIELD_NUMBER: _ClassVar[int]
    AXIS_FIELD_NUMBER: _ClassVar[int]
    CHILD_FIELD_NUMBER: _ClassVar[int]
    CONTINUOUS: Joint.Type
    DAMPING_FIELD_NUMBER: _ClassVar[int]
    FIXED: Joint.Type
    FLOATING: Joint.Type
    NAME_FIELD_NUMBER: _ClassVar[int]
    ORIGIN_FIELD_NUMBER: _ClassVar[int]
    PARENT_FIELD_NUMBER: _ClassVar[int]
    PRISMATIC: Joint.Type
    REVOLUTE: Joint.Type
    SPHERICAL: Joint.Type
    SPRING_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_UNSPECIFIED: Joint.Type
    actuator_input: str
    axis: Vector3
    child: str
    damping: float
    name: str
    origin: Pose
    parent: str
    spring: JointSpring
    type: Joint.Type
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[Joint.Type, str]] = ..., parent: _Optional[str] = ..., child: _Optional[str] = ..., origin: _Optional[_Union[Pose, _Mapping]] = ..., axis: _Optional[_Union[Vector3, _Mapping]] = ..., spring: _Optional[_Union[JointSpring, _Mapping]] = ..., damping: _Optional[float] = ..., actuator_input: _Optional[str] = ...) -> None: ...

class JointSpring(_message.Message):
    __slots__ = ["rest", "stiffness"]
    REST_FIELD_NUMBER: _ClassVar[int]
    STIFFNESS_FIELD_NUMBER: _ClassVar[int]
    rest: float
    stiffness: float
    def __init__(self, stiffness: _Optional[float] = ..., rest: _Optional[float] = ...) -> None: ...

class LoopClosure(_message.Message):
    __slots__ = ["axis", "body_a", "body_b", "distance", "gains", "name", "plane_normal", "point_a", "point_b", "type"]
    class Type(int, metaclass=_enum_type_wrapper.EnumTypeWrapper):
        __slots__ = []
    AXIS_FIELD_NUMBER: _ClassVar[int]
    BODY_A_FIELD_NUMBER: _ClassVar[int]
    BODY_B_FIELD_NUMBER: _ClassVar[int]
    DISTANCE: LoopClosure.Type
    DISTANCE_FIELD_NUMBER: _ClassVar[int]
    GAINS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    PLANE_NORMAL_FIELD_NUMBER: _ClassVar[int]
    POINT_A_FIELD_NUMBER: _ClassVar[int]
    POINT_B_FIELD_NUMBER: _ClassVar[int]
    POINT_ON_AXIS: LoopClosure.Type
    POINT_TO_POINT: LoopClosure.Type
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TYPE_UNSPECIFIED: LoopClosure.Type
    axis: Vector3
    body_a: str
    body_b: str
    distance: float
    gains: Baumgarte
    name: str
    plane_normal: Vector3
    point_a: Vector3
    point_b: Vector3
    type: LoopClosure.Type
    def __init__(self, name: _Optional[str] = ..., type: _Optional[_Union[LoopClosure.Type, str]] = ..., body_a: _Optional[str] = ..., point_a: _Optional[_Union[Vector3, _Mapping]] = ..., body_b: _Optional[str] = ..., point_b: _Optional[_Union[Vector3, _Mapping]] = ..., axis: _Optional[_Union[Vector3, _Mapping]] = ..., distance: _Optional[float] = ..., plane_normal: _Optional[_Union[Vector3, _Mapping]] = ..., gains: _Optional[_Union[Baumgarte, _Mapping]] = ...) -> None: ...

class Mechanism(_message.Message):
    __slots__ = ["bodies", "gravity", "joints", "loop_closures"]
    BODIES_FIELD_NUMBER: _ClassVar[int]
    GRAVITY_FIELD_NUMBER: _ClassVar[int]
    JOINTS_FIELD_NUMBER: _ClassVar[int]
    LOOP_CLOSURES_FIELD_NUMBER: _ClassVar[int]
    bodies: _containers.RepeatedCompositeFieldContainer[Body]
    gravity: Vector3
    joints: _containers.RepeatedCompositeFieldContainer[Joint]
    loop_closures: _containers.RepeatedCompositeFieldContainer[LoopClosure]
    def __init__(self, bodies: _Optional[_Iterable[_Union[Body, _Mapping]]] = ..., joints: _Optional[_Iterable[_Union[Joint, _Mapping]]] = ..., gravity: _Optional[_Union[Vector3, _Mapping]] = ..., loop_closures: _Optional[_Iterable[_Union[LoopClosure, _Mapping]]] = ...) -> None: ...

class Output(_message.Message):
    __slots__ = ["expression", "name"]
    EXPRESSION_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    expression: str
    name: str
    def __init__(self, name: _Optional[str] = ..., expression: _Optional[str] = ...) -> None: ...

class Parameter(_message.Message):
    __slots__ = ["name", "value"]
    NAME_FIELD_NUMBER: _ClassVar[int]
    VALUE_FIELD_NUMBER: _ClassVar[int]
    name: str
    value: float
    def __init__(self, name: _Optional[str] = ..., value: _Optional[float] = ...) -> None: ...

class Pose(_message.Message):
    __slots__ = ["rpy", "xyz"]
    RPY_FIELD_NUMBER: _ClassVar[int]
    XYZ_FIELD_NUMBER: _ClassVar[int]
    rpy: Vector3
    xyz: Vector3
    def __init__(self, xyz: _Optional[_Union[Vector3, _Mapping]] = ..., rpy: _Optional[_Union[Vector3, _Mapping]] = ...) -> None: ...

class Residuals(_message.Message):
    __slots__ = ["constraint", "dynamics", "position", "velocity"]
    CONSTRAINT_FIELD_NUMBER: _ClassVar[int]
    DYNAMICS_FIELD_NUMBER: _ClassVar[int]
    POSITION_FIELD_NUMBER: _ClassVar[int]
    VELOCITY_FIELD_NUMBER: _ClassVar[int]
    constraint: float
    dynamics: float
    position: _containers.RepeatedScalarFieldContainer[float]
    velocity: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, position: _Optional[_Iterable[float]] = ..., velocity: _Optional[_Iterable[float]] = ..., dynamics: _Optional[float] = ..., constraint: _Optional[float] = ...) -> None: ...

class SessionExport(_message.Message):
    __slots__ = ["display_name", "spec", "spec_sha256", "state"]
    DISPLAY_NAME_FIELD_NUMBER: _ClassVar[int]
    SPEC_FIELD_NUMBER: _ClassVar[int]
    SPEC_SHA256_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    display_name: str
    spec: SimulationSpec
    spec_sha256: bytes
    state: SimulationState
    def __init__(self, spec: _Optional[_Union[SimulationSpec, _Mapping]] = ..., state: _Optional[_Union[SimulationState, _Mapping]] = ..., spec_sha256: _Optional[bytes] = ..., display_name: _Optional[str] = ...) -> None: ...

class SimulationSpec(_message.Message):
    __slots__ = ["certificate", "initial", "integrator", "system"]
    CERTIFICATE_FIELD_NUMBER: _ClassVar[int]
    INITIAL_FIELD_NUMBER: _ClassVar[int]
    INTEGRATOR_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FIELD_NUMBER: _ClassVar[int]
    certificate: CertificateOptions
    initial: State
    integrator: IntegratorSpec
    system: SystemSpec
    def __init__(self, system: _Optional[_Union[SystemSpec, _Mapping]] = ..., initial: _Optional[_Union[State, _Mapping]] = ..., integrator: _Optional[_Union[IntegratorSpec, _Mapping]] = ..., certificate: _Optional[_Union[CertificateOptions, _Mapping]] = ...) -> None: ...

class SimulationState(_message.Message):
    __slots__ = ["anchor_steps", "inputs", "newton_iterations", "next_step_size", "state", "step", "time_anchor"]
    ANCHOR_STEPS_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    NEWTON_ITERATIONS_FIELD_NUMBER: _ClassVar[int]
    NEXT_STEP_SIZE_FIELD_NUMBER: _ClassVar[int]
    STATE_FIELD_NUMBER: _ClassVar[int]
    STEP_FIELD_NUMBER: _ClassVar[int]
    TIME_ANCHOR_FIELD_NUMBER: _ClassVar[int]
    anchor_steps: int
    inputs: _containers.RepeatedScalarFieldContainer[float]
    newton_iterations: int
    next_step_size: float
    state: State
    step: int
    time_anchor: float
    def __init__(self, state: _Optional[_Union[State, _Mapping]] = ..., step: _Optional[int] = ..., inputs: _Optional[_Iterable[float]] = ..., time_anchor: _Optional[float] = ..., anchor_steps: _Optional[int] = ..., next_step_size: _Optional[float] = ..., newton_iterations: _Optional[int] = ...) -> None: ...

class State(_message.Message):
    __slots__ = ["q", "t", "v"]
    Q_FIELD_NUMBER: _ClassVar[int]
    T_FIELD_NUMBER: _ClassVar[int]
    V_FIELD_NUMBER: _ClassVar[int]
    q: _containers.RepeatedScalarFieldContainer[float]
    t: float
    v: _containers.RepeatedScalarFieldContainer[float]
    def __init__(self, t: _Optional[float] = ..., q: _Optional[_Iterable[float]] = ..., v: _Optional[_Iterable[float]] = ...) -> None: ...

class SystemSpec(_message.Message):
    __slots__ = ["baumgarte", "constraints", "coordinates", "definitions", "generalized_forces", "inputs", "kinetic_energy", "mass_matrix", "masses", "mechanism", "outputs", "parameters", "potential_energy"]
    BAUMGARTE_FIELD_NUMBER: _ClassVar[int]
    CONSTRAINTS_FIELD_NUMBER: _ClassVar[int]
    COORDINATES_FIELD_NUMBER: _ClassVar[int]
    DEFINITIONS_FIELD_NUMBER: _ClassVar[int]
    GENERALIZED_FORCES_FIELD_NUMBER: _ClassVar[int]
    INPUTS_FIELD_NUMBER: _ClassVar[int]
    KINETIC_ENERGY_FIELD_NUMBER: _ClassVar[int]
    MASSES_FIELD_NUMBER: _ClassVar[int]
    MASS_MATRIX_FIELD_NUMBER: _ClassVar[int]
    MECHANISM_FIELD_NUMBER: _ClassVar[int]
    OUTPUTS_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    POTENTIAL_ENERGY_FIELD_NUMBER: _ClassVar[int]
    baumgarte: Baumgarte
    constraints: _containers.RepeatedCompositeFieldContainer[Constraint]
    coordinates: _containers.RepeatedScalarFieldContainer[str]
    definitions: _containers.RepeatedCompositeFieldContainer[Definition]
    generalized_forces: _containers.RepeatedScalarFieldContainer[str]
    inputs: _containers.RepeatedCompositeFieldContainer[Input]
    kinetic_energy: str
    mass_matrix: DenseMass
    masses: DiagonalMass
    mechanism: Mechanism
    outputs: _containers.RepeatedCompositeFieldContainer[Output]
    parameters: _containers.RepeatedCompositeFieldContainer[Parameter]
    potential_energy: str
    def __init__(self, coordinates: _Optional[_Iterable[str]] = ..., parameters: _Optional[_Iterable[_Union[Parameter, _Mapping]]] = ..., inputs: _Optional[_Iterable[_Union[Input, _Mapping]]] = ..., masses: _Optional[_Union[DiagonalMass, _Mapping]] = ..., mass_matrix: _Optional[_Union[DenseMass, _Mapping]] = ..., kinetic_energy: _Optional[str] = ..., potential_energy: _Optional[str] = ..., generalized_forces: _Optional[_Iterable[str]] = ..., constraints: _Optional[_Iterable[_Union[Constraint, _Mapping]]] = ..., baumgarte: _Optional[_Union[Baumgarte, _Mapping]] = ..., outputs: _Optional[_Iterable[_Union[Output, _Mapping]]] = ..., definitions: _Optional[_Iterable[_Union[Definition, _Mapping]]] = ..., mechanism: _Optional[_Union[Mechanism, _Mapping]] = ...) -> None: ...

class ValidationReport(_message.Message):
    __slots__ = ["diagnostics", "initial", "initial_consistent", "initial_position_residual", "initial_velocity_residual", "stability_margin", "step_stable", "valid"]
    DIAGNOSTICS_FIELD_NUMBER: _ClassVar[int]
    INITIAL_CONSISTENT_FIELD_NUMBER: _ClassVar[int]
    INITIAL_FIELD_NUMBER: _ClassVar[int]
    INITIAL_POSITION_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    INITIAL_VELOCITY_RESIDUAL_FIELD_NUMBER: _ClassVar[int]
    STABILITY_MARGIN_FIELD_NUMBER: _ClassVar[int]
    STEP_STABLE_FIELD_NUMBER: _ClassVar[int]
    VALID_FIELD_NUMBER: _ClassVar[int]
    diagnostics: _containers.RepeatedCompositeFieldContainer[Diagnostic]
    initial: Frame
    initial_consistent: bool
    initial_position_residual: float
    initial_velocity_residual: float
    stability_margin: float
    step_stable: bool
    valid: bool
    def __init__(self, valid: bool = ..., diagnostics: _Optional[_Iterable[_Union[Diagnostic, _Mapping]]] = ..., initial: _Optional[_Union[Frame, _Mapping]] = ..., initial_consistent: bool = ..., initial_position_residual: _Optional[float] = ..., initial_velocity_residual: _Optional[float] = ..., step_stable: bool = ..., stability_margin: _Optional[float] = ...) -> None: ...

class Vector3(_message.Message):
    __slots__ = ["x", "y", "z"]
    X_FIELD_NUMBER: _ClassVar[int]
    Y_FIELD_NUMBER: _ClassVar[int]
    Z_FIELD_NUMBER: _ClassVar[int]
    x: float
    y: float
    z: float
    def __init__(self, x: _Optional[float] = ..., y: _Optional[float] = ..., z: _Optional[float] = ...) -> None: ...
