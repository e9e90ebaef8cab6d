"""The rules azjax plays Go by, in KataGo's JSON (`kata-get-rules`, `kata-set-rules`; KataGo's
docs/GTP_Extensions.md):

    {"hasButton":false,"ko":"POSITIONAL","komi":7.5,"scoring":"AREA","suicide":false,"tax":"NONE","whiteHandicapBonus":"0"}

pgx's rules: Tromp-Taylor area scoring (stones plus the empty regions that reach only one colour, every stone on
the board counted for its colour; `tax` NONE), positional superko (a move that repeats an earlier board, whoever
was to move then, loses the game at once, which a search never chooses while it has another move, where KataGo
makes it illegal), multi-stone and single-stone suicide illegal (KataGo's `tromp-taylor` allows it; pgx does not),
no button, and no compensation for handicap stones (`whiteHandicapBonus` "0": the komi is the game's).

`kata-set-rules` accepts these rules only: the shorthand `tromp-taylor` (whose suicide rule differs as said), or a
JSON object whose fields all equal these (any subset of them; a `komi` field sets the komi).
"""

from __future__ import annotations

import json
from typing import Any

RULES: dict[str, Any] = {"hasButton": False, "ko": "POSITIONAL", "scoring": "AREA", "suicide": False,
                         "tax": "NONE", "whiteHandicapBonus": "0"}
SHORTHANDS = ("tromp-taylor",)


def rules_json(komi: float) -> str:
    """The rules with the game's komi, as one line of JSON (keys sorted, no spaces: KataGo's form)."""
    return json.dumps({**RULES, "komi": komi}, sort_keys=True, separators=(",", ":"))


def parse_rules(text: str) -> float | None:
    """Checks that `text` (a shorthand or a JSON object) names the rules azjax plays; returns the komi it sets
    (None: it sets none). ValueError, naming what differs, for any other rules."""
    text = text.strip()
    if not text:
        raise ValueError("kata-set-rules needs rules: tromp-taylor or a JSON object")
    if text[0] not in "{[\"":  # a shorthand, else JSON
        if text.lower() in SHORTHANDS:
            return None
        raise ValueError(f"unsupported rules {text!r}: azjax plays tromp-taylor only (area scoring, positional "
                         "superko, no suicide)")
    try:
        given = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(f"rules are not valid JSON: {err.msg} at column {err.colno}") from None
    if not isinstance(given, dict):
        raise ValueError("rules must be a JSON object")
    komi = None
    for key, value in given.items():
        if key == "komi":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"komi must be a number, not {value!r}")
            komi = float(value)
        elif key not in RULES:
            raise ValueError(f"unknown rule {key!r} (known: {', '.join(sorted(RULES))}, komi)")
        elif not _same(value, RULES[key]):
            raise ValueError(f"unsupported rule {key}={json.dumps(value)}: azjax plays {key}="
                             f"{json.dumps(RULES[key])} only")
    return komi


def _same(value: Any, ours: Any) -> bool:
    if isinstance(ours, bool):
        return value is ours
    return isinstance(value, str) and value.upper() == str(ours).upper()
