"""Shared Python solver pieces: outer loops, step-size rules, projections, and the
history / verbose / callback / warning convention."""
from ._epoch_projection import epoch_lengths, epoch_projection
from ._fista import Point, fista
from ._monitor import DivergenceError, FitMonitor, check_finite_iterate
from ._projections import project_l1_ball, project_psd
from ._result import SolverResult
from ._step_size import (cap_steps, curvature_step, decaying_step, probe_curvature,
                         rayleigh_power_iteration, row_curvature, row_loss_step,
                         safe_sgd_step, squared_row_norms, stabilized_bb_step, step_schedule)
from ._stopping import LabelChangeStop, ObjectiveStall, RelativeChangeStop, relative_change
from ._svrg import svrg

__all__ = [
    "DivergenceError",
    "FitMonitor",
    "LabelChangeStop",
    "ObjectiveStall",
    "Point",
    "RelativeChangeStop",
    "SolverResult",
    "cap_steps",
    "check_finite_iterate",
    "curvature_step",
    "decaying_step",
    "epoch_lengths",
    "epoch_projection",
    "fista",
    "probe_curvature",
    "project_l1_ball",
    "project_psd",
    "rayleigh_power_iteration",
    "relative_change",
    "row_curvature",
    "row_loss_step",
    "safe_sgd_step",
    "squared_row_norms",
    "stabilized_bb_step",
    "step_schedule",
    "svrg",
]
