"""The continuous closed loop that cosim_pid.py co-simulates, integrated by
scipy (independent of Tether): the pendulum of
examples/pendulum_force_input.json (m = 1, l = 1, grav = 9.81) in its angle
theta, pushed horizontally by the PID controller of
examples/cosim_fmu/pid_controller.c with its default gains,

    theta'' = -(grav/l) sin(theta) + F cos(theta) / (m l)
    z'      = setpoint - theta
    F       = kp (setpoint - theta) + ki z - kd theta'

from rest at theta = 0. Its equilibrium holds theta = setpoint with
F = m grav tan(setpoint).
"""
import math

from scipy.integrate import solve_ivp

GRAV, KP, KI, KD = 9.81, 20.0, 30.0, 6.0


def closed_loop(times, setpoint):
    """theta, omega and F at `times` (ascending, from 0)."""

    def rhs(_, s):
        theta, omega, z = s
        force = KP * (setpoint - theta) + KI * z - KD * omega
        return [omega, -GRAV * math.sin(theta) + force * math.cos(theta), setpoint - theta]

    sol = solve_ivp(rhs, (times[0], times[-1]), [0.0, 0.0, 0.0], t_eval=times, method="DOP853",
                    rtol=1e-10, atol=1e-12)
    theta, omega, z = sol.y
    force = [KP * (setpoint - a) + KI * c - KD * w for a, w, c in zip(theta, omega, z)]
    return list(theta), list(omega), force
