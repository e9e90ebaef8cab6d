"""KataGo's rules JSON for the rules azjax plays: written, and read back only where it names those rules."""

from __future__ import annotations

import json

import pytest

from azjax.engines.kata_rules import RULES, parse_rules, rules_json


def test_rules_json_is_katagos_one_line_form_with_the_komi():
    text = rules_json(7.5)
    assert " " not in text and json.loads(text) == {**RULES, "komi": 7.5}
    assert json.loads(text)["scoring"] == "AREA" and json.loads(text)["ko"] == "POSITIONAL"
    assert json.loads(text)["suicide"] is False


def test_only_the_rules_played_are_accepted():
    assert parse_rules("tromp-taylor") is None and parse_rules("Tromp-Taylor") is None
    assert parse_rules(rules_json(6.5)) == 6.5
    assert parse_rules('{"scoring":"area","ko":"positional"}') is None  # a subset, any case
    for text, message in (("", "needs rules"), ("japanese", "unsupported rules 'japanese'"),
                          ('{"scoring":"TERRITORY"}', 'unsupported rule scoring="TERRITORY"'),
                          ('{"suicide":true}', "unsupported rule suicide=true"),
                          ('{"suicide":"false"}', 'unsupported rule suicide="false"'),
                          ('{"button":false}', "unknown rule 'button'"), ('{"komi":"7.5"}', "komi must be a number"),
                          ("[1]", "must be a JSON object"), ('{"ko":', "not valid JSON")):
        with pytest.raises(ValueError, match=message):
            parse_rules(text)
