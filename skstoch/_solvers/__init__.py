"""Shared Python solver pieces: outer loops, step-size rules, projections, and the
history / verbose / callback / warning convention."""
from ._epoch_projection import epoch_lengths, epoch_projection
from ._fista import Point, fista
from ._monitor import DivergenceError, FitMonitor, check_finite_iterate
from ._projections import project_l1_ball, project_psd
from ._result import SolverResult
from ._step_size import (curvature_step, decaying_step, probe_curvature,
                         rayleigh_power_iteration, row_curvature, safe_sgd_step,
                         squared_row_norms, stabilized_bb_step)
from ._stopping import ObjectiveStall, RelativeChangeStop, relative_change
from ._svrg import svrg
# TSGS3VM (S3VMClassifier): its step rules and its stopping test
from ._step_size import cap_steps, row_loss_step, step_schedule
from ._stopping import LabelChangeStop

__all__ = [
    "DivergenceError",
    "FitMonitor",
    "ObjectiveStall",
    "Point",
    "RelativeChangeStop",
    "SolverResult",
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
    "safe_sgd_step",
    "squared_row_norms",
    "stabilized_bb_step",
    "svrg",
    "LabelChangeStop",
    "cap_steps",
    "row_loss_step",
    "step_schedule",
]
