"""Which part of the book each ONNX operator belongs to. The order of the parts is the book's order."""

FAMILIES: dict[str, tuple[str, ...]] = {
    "Elementwise math": (
        "Abs", "Acos", "Acosh", "Asin", "Asinh", "Atan", "Atanh", "Ceil", "Clip", "Cos", "Cosh", "Erf", "Exp",
        "Floor", "Identity", "IsInf", "IsNaN", "Log", "Neg", "Reciprocal", "Round", "Sigmoid", "Sign", "Sin",
        "Sinh", "Sqrt", "Tan", "Tanh",
    ),
    "Elementwise binary, comparison and logic": (
        "Add", "And", "BitShift", "BitwiseAnd", "BitwiseNot", "BitwiseOr", "BitwiseXor", "Div", "Equal",
        "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "Max", "Mean", "Min", "Mod", "Mul", "Not", "Or",
        "Pow", "Sub", "Sum", "Where", "Xor",
    ),
    "Activations": (
        "Celu", "Elu", "Gelu", "HardSigmoid", "HardSwish", "Hardmax", "LeakyRelu", "LogSoftmax", "Mish", "PRelu",
        "Relu", "Selu", "Shrink", "Softmax", "Softplus", "Softsign", "SwiGLU", "Swish", "ThresholdedRelu",
    ),
    "Reductions and scans": (
        "ArgMax", "ArgMin", "CumProd", "CumSum", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
        "ReduceMax", "ReduceMean", "ReduceMin", "ReduceProd", "ReduceSum", "ReduceSumSquare", "TopK",
    ),
    "Linear algebra": ("Det", "Einsum", "EyeLike", "Gemm", "MatMul", "MatMulInteger", "Trilu"),
    "Shape, indexing and casting": (
        "BitCast", "Cast", "CastLike", "CenterCropPad", "Compress", "Concat", "Constant", "ConstantOfShape",
        "DepthToSpace", "Expand", "Flatten", "Gather", "GatherElements", "GatherND", "NonZero", "OneHot", "Pad",
        "Range", "Reshape", "ReverseSequence", "ScatterElements", "ScatterND", "Shape", "Size", "Slice",
        "SpaceToDepth", "Split", "Squeeze", "TensorScatter", "Tile", "Transpose", "Unique", "Unsqueeze",
    ),
    "Convolution, pooling and image": (
        "AffineGrid", "AveragePool", "CausalConvWithState", "Col2Im", "Conv", "ConvTranspose", "DeformConv",
        "GlobalAveragePool", "GlobalLpPool", "GlobalMaxPool", "GridSample", "LpPool", "MaxPool", "MaxRoiPool",
        "MaxUnpool", "Resize", "RoiAlign",
    ),
    "Normalization": (
        "BatchNormalization", "GroupNormalization", "InstanceNormalization", "LRN", "LayerNormalization",
        "LpNormalization", "MeanVarianceNormalization", "RMSNormalization",
    ),
    "Recurrent and attention": ("Attention", "GRU", "LSTM", "LinearAttention", "RNN", "RotaryEmbedding"),
    "Losses": ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"),
    "Signal, quantization, random and strings": (
        "Bernoulli", "BlackmanWindow", "ConvInteger", "DFT", "DequantizeLinear", "Dropout",
        "DynamicQuantizeLinear", "HammingWindow", "HannWindow", "ImageDecoder", "MelWeightMatrix", "Multinomial",
        "NonMaxSuppression", "QLinearConv", "QLinearMatMul", "QuantizeLinear", "RandomNormal", "RandomNormalLike", "RandomUniform",
        "RandomUniformLike", "RegexFullMatch", "STFT", "StringConcat", "StringNormalizer", "StringSplit",
        "TfIdfVectorizer",
    ),
    "Control flow, sequences and optionals": (
        "ConcatFromSequence", "If", "Loop", "Optional", "OptionalGetElement", "OptionalHasElement", "Scan",
        "SequenceAt", "SequenceConstruct", "SequenceEmpty", "SequenceErase", "SequenceInsert", "SequenceLength",
        "SequenceMap", "SplitToSequence",
    ),
}


def family_of(op: str) -> str:
    for family, ops in FAMILIES.items():
        if op in ops:
            return family
    raise KeyError(f"{op} is in no family of the book; add it to proofkit.families.FAMILIES")


def slug(family: str) -> str:
    """File-name form of a family's title: 'Shape, indexing and casting' -> 'shape-indexing-and-casting'."""
    return "-".join("".join(c if c.isalnum() else " " for c in family.lower()).split())
