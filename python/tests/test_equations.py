"""Hand-computed examples for Eqs. 1-8 (RT-SMR (RTAS 2018) §VI); the arithmetic is in the comments."""
import math

import pytest

from tsync_rta.analysis import (allocations, allocations_task, delta, garbage_bound,
                                read_response_time, response_time, smr_interference)
from tsync_rta.model import Task


def T(name, p, a, e=1.0):
    return Task(name=name, e=e, p=p, core=0, prio=1.0, a=a)


def test_eq1_allocations_of_one_task():
    # A_i(W) = ceil((W + r_i) / p_i) * a_i
    # W=25, r=5, p=10, a=3: ceil(30/10) = 3 jobs -> 3*3 = 9 objects
    assert allocations_task(25, 5, 10, 3) == 9
    # W=26: ceil(31/10) = 4 jobs -> 12 objects
    assert allocations_task(26, 5, 10, 3) == 12
    # a task that allocates nothing
    assert allocations_task(1e6, 5, 10, 0) == 0


def test_eq2_allocations_of_the_system():
    # A(W) = Σ A_i(W); W = 12
    # t1: p=10, r=3, a=1: ceil(15/10)=2 -> 2
    # t2: p=4,  r=1, a=2: ceil(13/4)=4  -> 8
    # t3: a=0           -> 0            total 10
    tasks = [T("t1", 10, 1), T("t2", 4, 2), T("t3", 7, 0)]
    assert allocations(12, tasks, {"t1": 3, "t2": 1, "t3": 2}) == 10


def test_eq3_eq4_delta():
    # Eq. 3: δ = L* + Δ* + q* = 4 + 1 + 10 = 15 (RT-ParSec, temporal)
    assert delta("rt", 4, 1, 10) == 15
    assert delta("temporal", 4, 1, 10) == 15
    # Eq. 4: δ_U = L* + q* = 4 + 10 = 14 (U-RCU waits for readers itself)
    assert delta("urcu", 4, 1, 10) == 14


def test_eq5_garbage_bound():
    # G* = Σ (1 + ceil((δ + r_σ* + r_i)/p_i)) a_i, δ = 15, r_σ* = 3.7
    # t1: p=20, r=3, a=2: 1 + ceil(21.7/20) = 1 + 2 = 3 -> 6
    # t2: p=10, r=2, a=1: 1 + ceil(20.7/10) = 1 + 3 = 4 -> 4
    # t3: a=0 -> 0                                       G* = 10
    tasks = [T("t1", 20, 2), T("t2", 10, 1), T("t3", 5, 0)]
    assert garbage_bound(tasks, {"t1": 3, "t2": 2, "t3": 1}, 15, 3.7) == 10


def test_eq6_classic_response_time():
    # r = e + b + Σ ceil(r/p_k) e_k, e=3, b=1, hp = {(p=5,e=1), (p=10,e=2)}, no SMR tasks
    # r0 = 4; r1 = 4 + ceil(4/5)*1 + ceil(4/10)*2 = 4+1+2 = 7
    # r2 = 4 + ceil(7/5)*1 + ceil(7/10)*2 = 4+2+2 = 8; r3 = 4 + 2 + 2 = 8 -> 8
    r = response_time(3, 1, [(5, 1), (10, 2)], [], 0.5, 0.1, lambda w: 0, False, 100)
    assert r == 8
    # deadline 7 < 8: unschedulable -> inf
    assert math.isinf(response_time(3, 1, [(5, 1), (10, 2)], [], 0.5, 0.1, lambda w: 0, False, 7))


def test_eq7_smr_interference():
    # I = Σ ceil(r/q_k) α + A(δ + r) β, r = 25, q = {10, 20}, α = 0.5, β = 0.1, A(δ+r) = 7
    # ceil(2.5)=3 -> 1.5; ceil(1.25)=2 -> 1.0; 7 * 0.1 = 0.7; total 3.2
    assert smr_interference(25, [10, 20], 0.5, 0.1, lambda w: 7) == pytest.approx(3.2)


def test_eq6_with_eq7():
    # e=3, b=0, no hp, one σ with q=10, α=0.5, β=0.1, A(δ + r) = ceil((15 + r + 3)/20)
    # r0 = 3: 3 + ceil(0.3)*0.5 + ceil(21/20)*0.1 = 3 + 0.5 + 0.2 = 3.7
    # r1 = 3.7: 3 + 0.5 + ceil(21.7/20)*0.1 = 3.7 -> 3.7
    A = lambda w: math.ceil((15 + w + 3) / 20)
    assert response_time(3, 0, [], [10], 0.5, 0.1, A, True, 20) == pytest.approx(3.7)
    # without the collection term (no σ ahead of the task): 3 + 0.5 = 3.5
    assert response_time(3, 0, [], [10], 0.5, 0.1, A, False, 20) == pytest.approx(3.5)


def test_eq8_read_response_time():
    # Δ = Γʳ + Σ ceil(Δ/p_k) e_k + Σ ceil(Δ/q_k) α + A(δ + Δ) β
    # Γʳ = 2, hp = {(p=10, e=3)}, ghp q = {20}, α = 1, β = 0.5, A(δ+Δ) = ceil((10 + Δ)/10)
    # Δ0 = 2: 2 + 3 + 1 + ceil(1.2)=2 * 0.5 = 7
    # Δ1 = 7: 2 + 3 + 1 + ceil(1.7)=2 * 0.5 = 7 -> 7
    A = lambda w: math.ceil((10 + w) / 10)
    assert read_response_time(2, [(10, 3)], [20], 1, 0.5, A, True, 100) == pytest.approx(7)
    # a higher-priority writer's spinning (ILP mode): +1.5 per window -> 8.5
    # Δ0 = 2: 2+3+1+1+1.5 = 8.5; Δ1 = 8.5: ceil(1.85)=2 -> 8.5
    assert read_response_time(2, [(10, 3)], [20], 1, 0.5, A, True, 100,
                              hp_spin=lambda w: 1.5) == pytest.approx(8.5)
    # b_i = 0 in Eq. 8: with nothing else the request takes exactly Γʳ
    assert read_response_time(2, [], [], 1, 0.5, A, False, 100) == 2
