"""tools/pretraining_curve.py: the SVG of masked-LM accuracy against time."""
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tools"))

import pretraining_curve  # noqa: E402  pylint: disable=wrong-import-position


def test_points_land_where_their_values_say():
  curves = [("a", [(0.0, 0.0), (50.0, 0.1), (100.0, 0.2)]), ("b & c", [(0.0, 0.05)])]
  text = pretraining_curve.svg(curves)
  lines = re.findall(r'<polyline [^>]*points="([^"]+)"', text)
  assert len(lines) == 2
  first = [tuple(map(float, p.split(","))) for p in lines[0].split()]
  # Axes end at the next tick past the data: x 0..110 (step 10), y 0..0.22 (step 0.02);
  # the plot spans x 60..620 and y 20..350 (SVG's y grows downwards).
  width, height = 620 - 60, 350 - 20
  expected = [(60 + width * x / 110, 20 + height * (1 - y / 0.22)) for x, y in curves[0][1]]
  assert [(round(a, 1), round(b, 1)) for a, b in first] == [
      (round(a, 1), round(b, 1)) for a, b in expected]
  assert "b &amp; c" in text and text.startswith("<svg") and text.rstrip().endswith("</svg>")


def test_tick_steps_are_one_two_or_five_times_a_power_of_ten():
  assert [pretraining_curve._nice_step(s) for s in (1.0, 0.23, 1800.0, 55.0)] == [  # pylint: disable=protected-access
      0.1, 0.05, 200.0, 10.0]
