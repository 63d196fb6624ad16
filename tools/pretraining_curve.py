"""Draws pretraining curves (masked-LM accuracy against wall-clock time) as an SVG file.

  python tools/pretraining_curve.py --output=docs/images/curve.svg \
      "recipe=out/korean/pretrain" "original flags=out/old/pretrain"

Each LABEL=RUN names a run_pretraining.py --output_dir; the curve is its TensorBoard
train/ scalars (`masked_lm_accuracy`, logged every --log_every_steps), the x axis the
seconds since that run's first logged step (TensorBoard's own wall-clock stamps), so
runs of different step rates compare at equal time. LABEL=RUN:SECONDS_PER_STEP puts each
point at step x SECONDS_PER_STEP instead: the time on an idle machine, from a step time
measured there (benchmarks/bench_pretraining.py), for runs made on a shared one.
Plain SVG (no plotting package): GitHub and every browser show it in Markdown.
"""

import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# pylint: disable=wrong-import-position
from bert.utils import runtime_log  # noqa: E402
if __name__ == "__main__":  # as the scripts: TensorFlow's runtime log quiet before it loads
  runtime_log.quiet()
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")  # tensorboard may load TensorFlow
from tensorboard.backend.event_processing import event_accumulator  # noqa: E402

from bert.cli import flags_common  # noqa: E402
from bert.cli import launch  # noqa: E402
from bert.utils import file_io  # noqa: E402
from bert.utils import paths  # noqa: E402
from bert.utils import atomic_output  # noqa: E402
from bert.utils import errors  # noqa: E402

COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")
WIDTH, HEIGHT, LEFT, RIGHT, TOP, BOTTOM = 640, 400, 60, 20, 20, 50


def read_curve(run_dir, tag="masked_lm_accuracy", seconds_per_step=None):
  """[(seconds, value)] of `tag` in run_dir/train: seconds since the first logged step,
  or step x seconds_per_step when that is given."""
  if not file_io.isdir(paths.join(run_dir, "train")):
    raise errors.UserError(f"{run_dir}: no train/ folder of TensorBoard events (is it "
                                 "a run_pretraining.py --output_dir?)")
  events = event_accumulator.EventAccumulator(paths.join(run_dir, "train"))
  events.Reload()
  if tag not in events.Tags()["scalars"]:
    raise errors.UserError(f"{run_dir}/train has no {tag!r} scalars (is it a "
                                 "run_pretraining.py --output_dir?)")
  points = events.Scalars(tag)
  if seconds_per_step:
    return [(p.step * seconds_per_step, p.value) for p in points]
  start = points[0].wall_time
  return [(p.wall_time - start, p.value) for p in points]


def svg(curves, x_label="seconds of pretraining", y_label="masked-LM accuracy"):
  """An SVG document (str) of [(label, [(x, y)])] with axes, ticks and a legend."""
  x_max = max(x for _, points in curves for x, _ in points) or 1.0
  y_max = max(y for _, points in curves for _, y in points) or 1.0
  x_step = _nice_step(x_max)
  y_step = _nice_step(y_max)
  x_max = x_step * (int(x_max / x_step + 1e-9) + 1)  # the next tick past the data
  y_max = y_step * (int(y_max / y_step + 1e-9) + 1)
  plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

  def px(x, y):
    return LEFT + plot_w * x / x_max, TOP + plot_h * (1 - y / y_max)

  out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
         'font-family="sans-serif" font-size="12">',
         f'<rect width="{WIDTH}" height="{HEIGHT}" fill="white"/>']
  for i in range(int(round(x_max / x_step)) + 1):
    x, _ = px(i * x_step, 0)
    out.append(f'<line x1="{x:.1f}" y1="{TOP}" x2="{x:.1f}" y2="{TOP + plot_h}" '
               'stroke="#ddd"/>')
    out.append(f'<text x="{x:.1f}" y="{TOP + plot_h + 16}" text-anchor="middle">'
               f'{i * x_step:g}</text>')
  for i in range(int(round(y_max / y_step)) + 1):
    _, y = px(0, i * y_step)
    out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + plot_w}" y2="{y:.1f}" '
               'stroke="#ddd"/>')
    out.append(f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end">'
               f'{i * y_step:.2f}</text>')
  out.append(f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 10}" text-anchor="middle">'
             f'{x_label}</text>')
  out.append(f'<text x="14" y="{TOP + plot_h / 2}" text-anchor="middle" '
             f'transform="rotate(-90 14 {TOP + plot_h / 2})">{y_label}</text>')
  for index, (label, points) in enumerate(curves):
    colour = COLOURS[index % len(COLOURS)]
    path = " ".join(f"{x:.1f},{y:.1f}" for x, y in (px(*p) for p in points))
    out.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{path}"/>')
    y = TOP + 16 + 18 * index
    out.append(f'<line x1="{LEFT + 12}" y1="{y - 4}" x2="{LEFT + 36}" y2="{y - 4}" '
               f'stroke="{colour}" stroke-width="2"/>')
    out.append(f'<text x="{LEFT + 42}" y="{y}">{_escape(label)}</text>')
  out.append("</svg>")
  return "\n".join(out) + "\n"


def _nice_step(span):
  """A tick step of 1, 2 or 5 times a power of ten giving 4 to 10 ticks over span."""
  step = 10.0 ** int(f"{span:e}".split("e")[1])
  for factor in (0.1, 0.2, 0.5, 1.0, 2.0, 5.0):
    if span / (step * factor) <= 10:
      return step * factor
  return step * 10


def _escape(text):
  return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def main(argv=None):
  parser = launch.ArgumentParser(description=__doc__.split("\n\n")[0])
  parser.add_argument("runs", nargs="+", help="LABEL=RUN_DIR[:SECONDS_PER_STEP] (a "
                      "run_pretraining output_dir)")
  parser.add_argument("--output", required=True, type=flags_common.expand_path,
                      help="the SVG file to write")
  parser.add_argument("--tag", default="masked_lm_accuracy")
  parser.add_argument("--x_label", default="seconds of pretraining")
  args = parser.parse_args(argv)
  with errors.report_user_errors(False, "pretraining_curve.py"):
    atomic_output.prepare_output_file(args.output, "output")
    curves = []
    for item in args.runs:
      label, sep, run_dir = item.partition("=")
      run_dir, _, per_step = run_dir.partition(":")
      run_dir = flags_common.expand_path(run_dir)
      if not sep or not file_io.isdir(run_dir):
        raise errors.UserError(f"{item!r}: expected LABEL=RUN_DIR[:SECONDS_PER_STEP] "
                                     "with an existing folder")
      try:
        seconds_per_step = float(per_step) if per_step else None
      except ValueError:
        raise errors.UserError(f"{item!r}: {per_step!r} is not a number of "
                                     "seconds") from None
      if seconds_per_step is not None and not (math.isfinite(seconds_per_step)
                                               and seconds_per_step > 0):
        raise errors.UserError(f"{item!r}: {per_step!r} seconds a step: must be a "
                                     "positive number")
      curves.append((label, read_curve(run_dir, args.tag, seconds_per_step)))
    with errors.disk_full_names(args.output, "output"):
      with atomic_output.atomic_open(args.output) as handle:
        handle.write(svg(curves, x_label=args.x_label, y_label=args.tag.replace("_", " ")))
  print(f"wrote {args.output}", file=sys.stderr)


if __name__ == "__main__":
  main()
