#!/usr/bin/env python3
"""Exports the two SavedModels of the serving benchmark (issue #11, docs/serving.md):

    OUT/mobilenet_v2   keras.applications.MobileNetV2(weights=None) at --image x --image x 3,
                       --alpha, 10 classes; input "keras_tensor" [?, image, image, 3]
    OUT/lstm           an LSTM(--units) classifier over frames of --features values, 10
                       classes; input "frames" [?, ?, features] (the sequence length is unknown:
                       give it with --input frames=B,T,F)

    python3 tools/export_serving_models.py --out /tmp/serving_models

Both are seeded (keras.utils.set_random_seed(--seed)), so two exports give the same weights.
"""
import argparse
import os
import sys


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    parser.add_argument("--out", required=True, help="directory to write mobilenet_v2/ and lstm/ into")
    parser.add_argument("--image", type=int, default=96, help="MobileNetV2 input size (default 96)")
    parser.add_argument("--alpha", type=float, default=1.0, help="MobileNetV2 width multiplier (default 1.0)")
    parser.add_argument("--units", type=int, default=128, help="LSTM units (default 128)")
    parser.add_argument("--features", type=int, default=32, help="LSTM input features per frame (default 32)")
    parser.add_argument("--seed", type=int, default=11)
    return parser.parse_args(argv)


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    import keras

    keras.utils.set_random_seed(args.seed)
    mobilenet = keras.applications.MobileNetV2(input_shape=(args.image, args.image, 3), alpha=args.alpha,
                                               weights=None, classes=10)
    mobilenet.export(os.path.join(args.out, "mobilenet_v2"), verbose=False)
    frames = keras.Input((None, args.features), name="frames")
    hidden = keras.layers.LSTM(args.units)(frames)
    lstm = keras.Model(frames, keras.layers.Dense(10, activation="softmax")(hidden))
    lstm.export(os.path.join(args.out, "lstm"), verbose=False)
    print(f"wrote {os.path.join(args.out, 'mobilenet_v2')} and {os.path.join(args.out, 'lstm')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
