"""tsync-rta: memory-bound and response-time analysis of real-time SMR.

Implements RT-SMR (RTAS 2018; Ren, Liu, Parmer, Brandenburg, "Scalable Memory Reclamation for
Multi-Core, Real-Time Systems") §VI: Eqs. 1-8, writer blocking under FIFO non-preemptive
spin locks (inflation-based and the ILP of its ref. [20]) and the quiescence-period
selection of Fig. 16. See docs/rt-analysis.md.
"""

__version__ = "0.1.0"

from .model import Task, TaskSet, TaskSetError, load_taskset, parse_taskset  # noqa: E402,F401
from .analysis import (Result, analyze, schedulability_test,  # noqa: E402,F401
                       select_quiescence_period)
from .admission import (Admission, AdmissionSpec, load_admission,  # noqa: E402,F401
                        parse_admission, select_periods)
