"""scansnap.book.numbers: a chapter's table of numbers, an HTML table in the page (not printed text)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from scansnap import book


def _frame() -> pd.DataFrame:
    return pd.DataFrame({"eta_Y/eta_Z": [1.0, 2.0], "entropy end": [1.234567, np.nan], "runs": [5, 5]}).set_index(
        "eta_Y/eta_Z")


def test_the_page_gets_an_html_table_with_every_number_to_its_digits() -> None:
    html = book.numbers(_frame(), digits=3)._repr_html_()
    assert html.count("<table") == 1 and 'class="table scansnap-numbers"' in html
    cells = re.findall(r'<td class="(sn-\w+)">([^<]*)</td>', html)
    # the index is the first column; numbers are right-aligned (sn-num), text is not (sn-text)
    assert cells == [("sn-num", "1"), ("sn-num", "1.23"), ("sn-num", "5"), ("sn-num", "2"), ("sn-num", "nan"),
                     ("sn-num", "5")], cells
    assert "<th scope=\"col\" class=\"sn-num\">eta_<wbr>Y/<wbr>eta_<wbr>Z</th>" in html
    text = book.numbers(pd.DataFrame({"run": ["<GD>"], "x": [0.5]}), index=False)._repr_html_()
    assert '<td class="sn-text">&lt;GD&gt;</td>' in text and '<td class="sn-num">0.5</td>' in text


def test_without_the_index_and_as_text() -> None:
    table = book.numbers(_frame().reset_index(), digits=2, index=False)
    assert table._repr_html_().count("<td") == 6  # two rows of three columns: no index column
    text = str(table).splitlines()
    assert text[0].split() == ["eta_Y/eta_Z", "entropy", "end", "runs"] and text[1].split() == ["1", "1.2", "5"]


@pytest.mark.parametrize("digits", [0, 18, 2.5])
def test_digits_out_of_range_name_the_parameter(digits) -> None:
    with pytest.raises((ValueError, TypeError), match="digits"):
        book.numbers(_frame(), digits=digits)
