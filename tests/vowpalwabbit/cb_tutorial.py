# ruff: noqa: UP032 - VW's tutorial as VW users write it
"""VW's contextual-bandit tutorial ("Simulating content personalization with contextual
bandits"), as a VW user runs it with VW's Python package: the simulated site's users and
articles, VW's Workspace choosing an article per visit and learning from its click, and the
click-through rate after each visit.  ``tests/vowpalwabbit/test_tutorial.py`` runs this file
unchanged but for its import line."""

import random

import vowpalwabbit

USER_LIKED_ARTICLE = -1.0
USER_DISLIKED_ARTICLE = 0.0


def get_cost(context, action):
    liked = {("Tom", "morning"): "politics", ("Tom", "afternoon"): "music",
             ("Anna", "morning"): "sports", ("Anna", "afternoon"): "politics"}
    if liked.get((context["user"], context["time_of_day"])) == action:
        return USER_LIKED_ARTICLE
    return USER_DISLIKED_ARTICLE


def get_cost_new1(context, action):
    liked = {("Tom", "morning"): "politics", ("Tom", "afternoon"): "sports",
             ("Anna", "morning"): "sports", ("Anna", "afternoon"): "sports"}
    if liked.get((context["user"], context["time_of_day"])) == action:
        return USER_LIKED_ARTICLE
    return USER_DISLIKED_ARTICLE


def to_vw_example_format(context, actions, cb_label=None):
    if cb_label is not None:
        chosen_action, cost, prob = cb_label
    example_string = ""
    example_string += "shared |User user={} time_of_day={}\n".format(
        context["user"], context["time_of_day"])
    for action in actions:
        if cb_label is not None and action == chosen_action:
            example_string += "0:{}:{} ".format(cost, prob)
        example_string += "|Action article={} \n".format(action)
    return example_string[:-1]  # (the last newline)


def sample_custom_pmf(pmf):
    total = sum(pmf)
    scale = 1 / total
    pmf = [x * scale for x in pmf]
    draw = random.random()
    sum_prob = 0.0
    for index, prob in enumerate(pmf):
        sum_prob += prob
        if sum_prob > draw:
            return index, prob
    return len(pmf) - 1, pmf[-1]


def get_action(vw, context, actions):
    vw_text_example = to_vw_example_format(context, actions)
    pmf = vw.predict(vw_text_example)
    chosen_action_index, prob = sample_custom_pmf(pmf)
    return actions[chosen_action_index], prob


users = ["Tom", "Anna"]
times_of_day = ["morning", "afternoon"]
actions = ["politics", "sports", "music", "food", "finance", "health", "camping"]


def choose_user(users):
    return random.choice(users)


def choose_time_of_day(times_of_day):
    return random.choice(times_of_day)


def run_simulation(vw, num_iterations, users, times_of_day, actions, cost_function,
                   do_learn=True):
    cost_sum = 0.0
    ctr = []
    for i in range(1, num_iterations + 1):
        user = choose_user(users)
        time_of_day = choose_time_of_day(times_of_day)
        context = {"user": user, "time_of_day": time_of_day}
        action, prob = get_action(vw, context, actions)
        cost = cost_function(context, action)
        cost_sum += cost
        if do_learn:
            vw_format = vw.parse(
                to_vw_example_format(context, actions, (action, cost, prob)),
                vowpalwabbit.LabelType.CONTEXTUAL_BANDIT)
            vw.learn(vw_format)
            vw.finish_example(vw_format)
        ctr.append(-1 * cost_sum / i)
    vw.finish()
    return ctr


def run_simulation_multiple_cost_functions(vw, num_iterations, users, times_of_day,
                                           actions, cost_functions, do_learn=True):
    cost_sum = 0.0
    ctr = []
    start_counter = 1
    end_counter = start_counter + num_iterations
    for cost_function in cost_functions:
        for i in range(start_counter, end_counter):
            user = choose_user(users)
            time_of_day = choose_time_of_day(times_of_day)
            context = {"user": user, "time_of_day": time_of_day}
            action, prob = get_action(vw, context, actions)
            cost = cost_function(context, action)
            cost_sum += cost
            if do_learn:
                vw_format = vw.parse(
                    to_vw_example_format(context, actions, (action, cost, prob)),
                    vowpalwabbit.LabelType.CONTEXTUAL_BANDIT)
                vw.learn(vw_format)
            ctr.append(-1 * cost_sum / i)
        start_counter = end_counter
        end_counter = start_counter + num_iterations
    vw.finish()
    return ctr


def curves(num_iterations=5000, seed=0):
    """Each scenario's click-through rates, visit by visit."""
    random.seed(seed)
    out = {}
    vw = vowpalwabbit.Workspace("--cb_explore_adf -q UA --quiet --epsilon 0.2")
    out["learning"] = run_simulation(vw, num_iterations, users, times_of_day, actions,
                                     get_cost)
    vw = vowpalwabbit.Workspace("--cb_explore_adf -q UA --quiet --epsilon 0.2")
    out["no_learning"] = run_simulation(vw, num_iterations, users, times_of_day, actions,
                                        get_cost, do_learn=False)
    vw = vowpalwabbit.Workspace("--cb_explore_adf -q UA --quiet --epsilon 0.2")
    out["changing"] = run_simulation_multiple_cost_functions(
        vw, num_iterations, users, times_of_day, actions, [get_cost, get_cost_new1])
    return out
