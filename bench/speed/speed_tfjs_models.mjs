// The conv nets of bench/speed/bench_speed.py for TF.js, built with its layers API at torchvision's
// shapes (batch 1, 224x224, NHWC), random weights (He-normal, so that activations neither vanish
// into denormals nor blow up). BatchNorm is left out, as it is folded into the convolutions' bias
// in the ONNX files (torch's export) and in TF.js graph models (its converter): each conv has a
// bias and its activation fused. build(name) -> a tf.LayersModel.
import * as tfl from "@tensorflow/tfjs-layers";

const conv = (x, filters, kernelSize, strides = 1, activation = "relu") =>
  tfl.layers.conv2d({ filters, kernelSize, strides, padding: "same", activation, kernelInitializer: "heNormal" }).apply(x);

const head = (x, classes = 1000) =>
  tfl.layers.dense({ units: classes, kernelInitializer: "heNormal" }).apply(tfl.layers.globalAveragePooling2d({}).apply(x));

function mobilenetV2(input) {
  let x = conv(input, 32, 3, 2, "relu6");
  let cin = 32;
  for (const [t, c, n, s] of [[1, 16, 1, 1], [6, 24, 2, 2], [6, 32, 3, 2], [6, 64, 4, 2], [6, 96, 3, 1], [6, 160, 3, 2], [6, 320, 1, 1]]) {
    for (let i = 0; i < n; i++) {
      const stride = i === 0 ? s : 1;
      let y = t === 1 ? x : conv(x, cin * t, 1, 1, "relu6");
      y = tfl.layers.depthwiseConv2d({ kernelSize: 3, strides: stride, padding: "same", activation: "relu6",
                                       // He-normal over a depthwise kernel's own 3x3 fan-in (TF.js's "heNormal" counts every channel)
                                       depthwiseInitializer: tfl.initializers.randomNormal({ stddev: Math.sqrt(2 / 9) }) }).apply(y);
      y = conv(y, c, 1, 1, "linear");
      x = stride === 1 && cin === c ? tfl.layers.add().apply([x, y]) : y;
      cin = c;
    }
  }
  return head(conv(x, 1280, 1, 1, "relu6"));
}

function squeezenet11(input) {
  const pool = (x) => tfl.layers.maxPooling2d({ poolSize: 3, strides: 2 }).apply(x);
  const fire = (x, s, e) => {
    const q = conv(x, s, 1);
    return tfl.layers.concatenate({ axis: -1 }).apply([conv(q, e, 1), conv(q, e, 3)]);
  };
  let x = tfl.layers.conv2d({ filters: 64, kernelSize: 3, strides: 2, padding: "valid", activation: "relu",
                              kernelInitializer: "heNormal" }).apply(input);
  x = fire(fire(pool(x), 16, 64), 16, 64);
  x = fire(fire(pool(x), 32, 128), 32, 128);
  x = fire(fire(fire(fire(pool(x), 48, 192), 48, 192), 64, 256), 64, 256);
  return tfl.layers.globalAveragePooling2d({}).apply(conv(x, 1000, 1));
}

function resnet50(input) {
  let x = tfl.layers.maxPooling2d({ poolSize: 3, strides: 2, padding: "same" }).apply(conv(input, 64, 7, 2));
  let cin = 64;
  for (const [width, blocks, stride] of [[64, 3, 1], [128, 4, 2], [256, 6, 2], [512, 3, 2]]) {
    for (let i = 0; i < blocks; i++) {
      const s = i === 0 ? stride : 1;
      let y = conv(x, width, 1);
      y = conv(y, width, 3, s); // ResNet v1.5, as torchvision: the stride on the 3x3
      y = conv(y, width * 4, 1, 1, "linear");
      const skip = s !== 1 || cin !== width * 4 ? conv(x, width * 4, 1, s, "linear") : x;
      x = tfl.layers.reLU().apply(tfl.layers.add().apply([y, skip]));
      cin = width * 4;
    }
  }
  return head(x);
}

export const TFJS_MODELS = { mobilenet_v2: mobilenetV2, squeezenet1_1: squeezenet11, resnet50 };

export function build(name) {
  if (!TFJS_MODELS[name]) throw new Error(`TF.js has no ${name} here (only ${Object.keys(TFJS_MODELS).join(", ")})`);
  const input = tfl.input({ shape: [224, 224, 3], batchSize: 1 });
  return tfl.model({ inputs: input, outputs: TFJS_MODELS[name](input) });
}
