import numpy as np, tensorflow as tf, graphi_tf
def build_step():
    m = tf.saved_model.load("/tmp/serving_models/mobilenet_v2")
    f = m.signatures["serving_default"]
    name, spec = list(f.structured_input_signature[1].items())[0]
    x = tf.constant(np.random.rand(1, *spec.shape[1:]).astype(np.float32))
    def step():
        with graphi_tf.executor_scope():
            return f(**{name: x})
    return step
