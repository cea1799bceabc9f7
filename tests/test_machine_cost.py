"""Machine judging priced beside human hours: tokens × price per million, call time, and the
human hours that the holes it filled would have taken."""

import math

import pytest

from goldset.eval.cost import labelling_cost, machine_judging_cost


def test_tokens_are_priced_per_million_as_providers_quote_them():
    cost = machine_judging_cost(10, 2_000_000, 500_000, 30.0, input_price=0.5, output_price=2.0)
    assert cost.dollars == pytest.approx(2 * 0.5 + 0.5 * 2.0)


def test_wall_time_is_the_call_time_shared_by_the_requests_in_flight():
    cost = machine_judging_cost(8, 0, 0, 80.0, input_price=0, output_price=0, concurrency=4)
    assert cost.wall_seconds == 20.0


def test_hours_saved_are_the_filled_holes_at_the_human_speed():
    cost = machine_judging_cost(
        400 * 4,
        0,
        0,
        0.0,
        input_price=0,
        output_price=0,
        human_seconds_per_judgement=20,
        hourly_rate=60,
        holes_filled=400 * 4,
    )
    human = labelling_cost(400, 4, 20, 60)  # the README's rule of thumb: the same labels
    assert (cost.saved.hours, cost.saved.dollars) == (human.hours, human.dollars)
    assert cost.as_dict()["net_dollars_saved"] == pytest.approx(human.dollars)


def test_labels_of_pairs_humans_already_labelled_save_nothing():
    cost = machine_judging_cost(
        50,
        1000,
        100,
        5.0,
        input_price=1,
        output_price=1,
        human_seconds_per_judgement=20,
        hourly_rate=60,
        holes_filled=0,
    )
    assert cost.saved.hours == 0 and cost.as_dict()["net_dollars_saved"] < 0


def test_unknown_human_speed_leaves_the_saving_unknown():
    cost = machine_judging_cost(5, 10, 10, 1.0, input_price=0, output_price=0)
    assert math.isnan(cost.saved.hours) and cost.as_dict()["human_saved"]["hours"] is None


@pytest.mark.parametrize("field", ["input_price", "output_price"])
def test_a_negative_price_is_refused(field):
    prices = {"input_price": 1.0, "output_price": 1.0, field: -1.0}
    with pytest.raises(ValueError, match=field):
        machine_judging_cost(1, 1, 1, 1.0, **prices)
