"""The step-by-step bound check shared by the tests of the LDS's rotation and
translation moves."""


def count_accepted_moves(model, data, n_iter, move):
    """Run ``n_iter`` iterations of ``model`` step by step, checking after every step
    that the bound, recomputed from scratch, has not decreased; return how many times
    the step named ``move`` changed q(x), asserting that each of those raised the bound."""
    previous = None
    accepted = 0
    for it in range(1, n_iter + 1):
        for step in model._iteration_steps():
            state = model._q_x
            step.run(data, it)
            if model._q_theta is None:
                continue
            value = model._lower_bound(data)
            if previous is not None:
                assert value >= previous - 1e-9 * abs(previous), (it, step.name)
            if step.name == move and model._q_x is not state:
                accepted += 1
                assert value > previous
            previous = value
    return accepted
