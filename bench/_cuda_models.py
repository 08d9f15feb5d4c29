"""The training models of bench/cuda_eager.py, each written once against `lib` (lucid or torch:
lucid mirrors torch.nn name for name, so one definition gives two structurally identical models
with the same state_dict keys, as tests/python/compile_models.py does at test sizes):

  mlp          784 -> 2048 -> 2048 -> 10, ReLU (batch 512, Adam)
  resnet18     torchvision's ResNet-18 (BasicBlock x [2, 2, 2, 2], 1000 classes) on 3x224x224
               (batch 32, SGD with momentum, train-mode BatchNorm)
  gpt2_block   one GPT-2-small block: pre-LayerNorm, fused qkv projection, causal
               scaled_dot_product_attention over 12 heads of 64, GELU MLP 768 -> 3072 -> 768,
               residuals (batch 8, 512 tokens, AdamW)

RESNET18_CONVS lists the distinct convolution shapes of ResNet-18 at 224x224 (the conv rows of
the benchmark), derived from the same layer table the model is built from.
"""
MLP_WIDTH = 2048
GPT2_WIDTH, GPT2_HEADS = 768, 12

# (stage channels, first stride) of ResNet-18's four stages, two BasicBlocks each
RESNET18_STAGES = ((64, 1), (128, 2), (256, 2), (512, 2))


def mlp(lib):
    nn = lib.nn
    return nn.Sequential(nn.Linear(784, MLP_WIDTH), nn.ReLU(), nn.Linear(MLP_WIDTH, MLP_WIDTH), nn.ReLU(),
                         nn.Linear(MLP_WIDTH, 10))


def resnet18(lib, num_classes=1000):
    nn = lib.nn
    F = lib.nn.functional

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.downsample = None
            if stride != 1 or cin != cout:
                self.downsample = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                                                nn.BatchNorm2d(cout))

        def forward(self, x):
            out = F.relu(self.bn1(self.conv1(x)))
            out = self.bn2(self.conv2(out))
            identity = x if self.downsample is None else self.downsample(x)
            return F.relu(out + identity)

    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64), nn.ReLU(),
              nn.MaxPool2d(3, stride=2, padding=1)]
    cin = 64
    for cout, stride in RESNET18_STAGES:
        layers += [BasicBlock(cin, cout, stride), BasicBlock(cout, cout, 1)]
        cin = cout
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, num_classes)]
    return nn.Sequential(*layers)


def resnet18_convs(batch, size=224):
    """[(name, input shape (N, C, H, W), out channels, kernel, stride, padding)], one per distinct
    convolution of ResNet-18."""
    convs = [("conv1 7x7/2 3->64", (batch, 3, size, size), 64, 7, 2, 3)]
    hw, cin = size // 4, 64  # after the stem's stride-2 conv and stride-2 max pool
    for cout, stride in RESNET18_STAGES:
        if stride != 1:
            convs.append((f"3x3/2 {cin}->{cout} @{hw}", (batch, cin, hw, hw), cout, 3, 2, 1))
            convs.append((f"1x1/2 {cin}->{cout} @{hw} (downsample)", (batch, cin, hw, hw), cout, 1, 2, 0))
            hw //= 2
        convs.append((f"3x3 {cout}->{cout} @{hw}", (batch, cout, hw, hw), cout, 3, 1, 1))
        cin = cout
    return convs


def gpt2_block(lib):
    nn = lib.nn
    F = lib.nn.functional
    d, h = GPT2_WIDTH, GPT2_HEADS

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1 = nn.LayerNorm(d)
            self.c_attn = nn.Linear(d, 3 * d)
            self.attn_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.c_fc = nn.Linear(d, 4 * d)
            self.mlp_proj = nn.Linear(4 * d, d)

        def forward(self, x):
            b, t, c = x.shape
            q, k, v = self.c_attn(self.ln_1(x)).split(d, dim=2)
            q = q.view(b, t, h, c // h).transpose(1, 2)
            k = k.view(b, t, h, c // h).transpose(1, 2)
            v = v.view(b, t, h, c // h).transpose(1, 2)
            y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
            x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(b, t, c))
            return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    return Block()
