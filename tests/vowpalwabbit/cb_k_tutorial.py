# ruff: noqa - VW's tutorial as VW users write it
"""VW's "Contextual Bandits Reinforcement Learning with Vowpal Wabbit" tutorial (its Python
notebook: ``--cb 4`` learned from a logged DataFrame, the actions chosen for new contexts,
the model saved and loaded again), as a VW user runs it with VW's package.
``tests/vowpalwabbit/test_cb_k.py`` runs this file unchanged but for its import line;
``run(folder)`` gives what the notebook prints."""

import pandas as pd
from vowpalwabbit import pyvw


def run(folder):
    printed = []
    train_data = [
        {"action": 1, "cost": 2, "probability": 0.4, "feature1": "a", "feature2": "c", "feature3": ""},
        {"action": 3, "cost": 0, "probability": 0.2, "feature1": "b", "feature2": "d", "feature3": ""},
        {"action": 4, "cost": 1, "probability": 0.5, "feature1": "a", "feature2": "b", "feature3": ""},
        {"action": 2, "cost": 1, "probability": 0.3, "feature1": "a", "feature2": "b", "feature3": "c"},
        {"action": 3, "cost": 1, "probability": 0.7, "feature1": "a", "feature2": "d", "feature3": ""},
    ]
    train_df = pd.DataFrame(train_data)
    train_df["index"] = range(1, len(train_df) + 1)
    train_df = train_df.set_index("index")

    test_data = [
        {"feature1": "b", "feature2": "c", "feature3": ""},
        {"feature1": "a", "feature2": "", "feature3": "b"},
        {"feature1": "b", "feature2": "b", "feature3": ""},
        {"feature1": "a", "feature2": "", "feature3": "b"},
    ]
    test_df = pd.DataFrame(test_data)
    test_df["index"] = range(1, len(test_df) + 1)
    test_df = test_df.set_index("index")

    vw = pyvw.Workspace("--cb 4", quiet=True)
    for i in train_df.index:
        action = train_df.loc[i, "action"]
        cost = train_df.loc[i, "cost"]
        probability = train_df.loc[i, "probability"]
        feature1 = train_df.loc[i, "feature1"]
        feature2 = train_df.loc[i, "feature2"]
        feature3 = train_df.loc[i, "feature3"]
        learn_example = (
            str(action) + ":" + str(cost) + ":" + str(probability) + " | "
            + str(feature1) + " " + str(feature2) + " " + str(feature3)
        )
        vw.learn(learn_example)

    for j in test_df.index:
        feature1 = test_df.loc[j, "feature1"]
        feature2 = test_df.loc[j, "feature2"]
        feature3 = test_df.loc[j, "feature3"]
        test_example = "| " + str(feature1) + " " + str(feature2) + " " + str(feature3)
        choice = vw.predict(test_example)
        printed.append((j, choice))

    vw.save(f"{folder}/cb.model")
    del vw
    vw = pyvw.Workspace(f"--cb 4 -i {folder}/cb.model", quiet=True)
    printed.append(vw.predict("| a b"))
    return printed
