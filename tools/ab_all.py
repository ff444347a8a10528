#!/usr/bin/env python3
"""``graphi-tf ab`` over the bundled models × sizes, and the README results.

For each case (model × size, in --mode) runs the A/B comparison of graphi_tf.lab.ab (every arm
in its own process, interleaved rounds), keeps its full outputs in --work-dir/<case>/ and
writes:
  docs/results/<case>.json   the case's report (graphi_tf.lab.report schema)
  docs/results/results.md    one summary table over all cases run so far (step times of the
                             main arms; GRAPHI auto and GRAPHI tuned vs stock default and best)
  docs/results/results.png   grouped bars: speedup over stock default per case
and rewrites the part of README.md between the lines
  <!-- results:begin -->
  <!-- results:end -->
with results.md and a link to results.png (only if both markers are there).

The summary covers every docs/results/<case>.json present, so cases may be run in parts:
  tools/ab_all.py --models lstm,pathnet --sizes small
  tools/ab_all.py --sizes large --repeats 3
"""
import argparse
import glob
import json
import os
import sys

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, ROOT)

from graphi_tf.lab import ab, report  # noqa: E402

# Per size: warm-up and timed steps per arm process, rounds, and the tuning run of
# graphi_tuned. Small steps take ~25 ms, medium ~200 ms, large ~1.5 s on 2 cores, so "large"
# gets 5 warm-up steps rather than 100 (its ops are all expensive, so stock TensorFlow's cost
# model has nothing to settle that changes where they run) and fewer rounds. Every arm,
# graphi_auto (the headline) included, runs in each round.
# --warmup/--steps SIZE=N override them per size, --repeats/--tune-warmup/--tune-steps for every size.
SIZE_DEFAULTS = {
    "small": {"warmup": ab.DEFAULT_WARMUP, "steps": ab.DEFAULT_STEPS, "repeats": ab.DEFAULT_REPEATS,
              "tune_warmup": ab.TUNE_WARMUP, "tune_steps": ab.TUNE_STEPS},
    "medium": {"warmup": 30, "steps": 20, "repeats": 3, "tune_warmup": 3, "tune_steps": 3},
    "large": {"warmup": 5, "steps": 5, "repeats": 2, "tune_warmup": 1, "tune_steps": 1},
}
PER_SIZE_KEYS = ("repeats", "tune_warmup", "tune_steps")
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"


def _choices(allowed):
    def parse(text):
        values = [v.strip() for v in text.split(",") if v.strip()]
        bad = [v for v in values if v not in allowed]
        if bad or not values:
            raise argparse.ArgumentTypeError(f"invalid value(s) {bad or text!r}; allowed: {','.join(allowed)}")
        return values

    return parse


def _per_size(text):
    """SIZE=N[,SIZE=N]: overrides of the per-size defaults."""
    out = {}
    for item in filter(None, (x.strip() for x in text.split(","))):
        size, sep, value = item.partition("=")
        if not sep or size not in ab.SIZES or not value.isdigit():
            raise argparse.ArgumentTypeError(
                f"invalid {item!r}; expected SIZE=N with SIZE one of {','.join(ab.SIZES)}")
        out[size] = int(value)
    return out


def parse_args(argv=None):
    defaults = "; ".join(f"{s}: {d['warmup']} warm-up + {d['steps']} timed steps, {d['repeats']} rounds, "
                         f"tuning {d['tune_warmup']}+{d['tune_steps']}" for s, d in SIZE_DEFAULTS.items())
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], epilog=__doc__.split("\n\n", 1)[1],
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", type=_choices(ab.MODELS), default=list(ab.MODELS),
                        help=f"comma-separated subset of {','.join(ab.MODELS)} (default: all)")
    parser.add_argument("--sizes", type=_choices(ab.SIZES), default=list(ab.SIZES),
                        help=f"comma-separated subset of {','.join(ab.SIZES)} (default: all)")
    parser.add_argument("--mode", choices=ab.MODES, default="graph", help="model mode (default graph)")
    parser.add_argument("--warmup", type=_per_size, default={}, metavar="SIZE=N,...",
                        help=f"warm-up steps per size, overriding the defaults ({defaults})")
    parser.add_argument("--steps", type=_per_size, default={}, metavar="SIZE=N,...",
                        help="timed steps per size, overriding the defaults above")
    parser.add_argument("--results-dir", default=os.path.join(ROOT, "docs", "results"),
                        help="where <case>.json, results.md and results.png go (default docs/results)")
    parser.add_argument("--work-dir", default="ab_results",
                        help="full per-case outputs: <work-dir>/<case>/ab.{json,md,png} (default ab_results)")
    parser.add_argument("--readme", default=os.path.join(ROOT, "README.md"),
                        help=f"README whose {BEGIN} ... {END} section is rewritten (default README.md)")
    parser.add_argument("--summary-only", action="store_true",
                        help="run nothing; rebuild results.md/png and the README from the JSON files")
    ab.add_arguments(parser, case=False)
    # Unset: the size's default (SIZE_DEFAULTS).
    parser.set_defaults(**{key: None for key in PER_SIZE_KEYS})
    args = parser.parse_args(argv)
    args.size_defaults = {}
    for size, d in SIZE_DEFAULTS.items():
        chosen = {"warmup": args.warmup.get(size, d["warmup"]), "steps": args.steps.get(size, d["steps"])}
        for key in PER_SIZE_KEYS:
            given = getattr(args, key)
            chosen[key] = d[key] if given is None else given
        args.size_defaults[size] = chosen
    return args


def _case_order(doc):
    case = doc["case"]
    m = ab.MODELS.index(case["model"]) if case.get("model") in ab.MODELS else len(ab.MODELS)
    s = ab.SIZES.index(case["size"]) if case.get("size") in ab.SIZES else len(ab.SIZES)
    return (m, s, case.get("mode") or "", case["name"])


def write_summary(results_dir, readme):
    docs = []
    for path in sorted(glob.glob(os.path.join(results_dir, "*.json"))):
        with open(path) as f:
            doc = json.load(f)
        if doc.get("schema_version") == report.SCHEMA_VERSION and doc.get("tool") == "graphi-tf ab":
            docs.append(doc)
    docs.sort(key=_case_order)
    if not docs:
        print(f"no reports in {results_dir}", file=sys.stderr)
        return None
    md = report.render_summary_markdown(docs)
    with open(os.path.join(results_dir, "results.md"), "w") as f:
        f.write(md)
    png = os.path.join(results_dir, "results.png")
    try:
        report.render_summary_png(docs, png)
    except report.ReportError as e:
        print(f"ab_all: no chart: {e}", file=sys.stderr)
        png = None
    if readme and os.path.isfile(readme):
        with open(readme) as f:
            text = f.read()
        if BEGIN in text and END in text.split(BEGIN, 1)[1]:
            head, rest = text.split(BEGIN, 1)
            tail = rest.split(END, 1)[1]
            body = md
            if png:
                rel = os.path.relpath(png, os.path.dirname(os.path.abspath(readme)))
                body += f"\n![speedup over stock default]({rel})\n"
            with open(readme, "w") as f:
                f.write(f"{head}{BEGIN}\n{body}{END}{tail}")
            print(f"rewrote the results section of {readme}", file=sys.stderr)
    return md


def main(argv=None):
    args = parse_args(argv)
    os.makedirs(args.results_dir, exist_ok=True)
    if not args.summary_only:
        for model in args.models:
            for size in args.sizes:
                case = ab.Case(model=model, size=size, mode=args.mode, seed=args.seed)
                n = args.size_defaults[size]
                print(f"=== {case.name}: {n['warmup']} warm-up + {n['steps']} timed steps, "
                      f"{n['repeats']} rounds", file=sys.stderr, flush=True)
                doc = ab.run_ab(case, os.path.join(args.work_dir, case.name), arms=args.arms,
                                warmup=n["warmup"], steps=n["steps"], repeats=n["repeats"],
                                sweep=args.sweep, tune_warmup=n["tune_warmup"], tune_steps=n["tune_steps"],
                                trace_steps=args.trace_steps, settle_autotune=args.settle_autotune,
                                timeout=args.timeout, python=args.python,
                                png=not args.no_png, env_arms=args.graphi_env,
                                extra_settings={"size_defaults": args.size_defaults, "tool": "tools/ab_all.py"})
                with open(os.path.join(args.results_dir, f"{case.name}.json"), "w") as f:
                    f.write(report.render_json(doc))
                print(report.render_terminal(doc), flush=True)
    md = write_summary(args.results_dir, args.readme)
    if md:
        print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
