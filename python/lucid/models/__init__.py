"""lucid.models: the seed's benchmark models as a model library (issue 13).

`create_model(name, **cfg)` builds a registered model; `list_models()` names them. State-dict
keys follow the reference implementations (torchvision for the vision models), so their
safetensors files load as they are: `model.load_state_dict(lucid.load("resnet18.safetensors"))`.
Each family lives in its own module and registers its constructors with `register_model`.

Built so far: ResNet-18 and ResNet-50 (`resnet.py`), MobileNet-v2 (`mobilenet.py`),
EfficientNet-B0 (`efficientnet.py`), DenseNet-121 (`densenet.py`), ViT-B/16
(`vision_transformer.py`), the LSTM classifier (`lstm.py`). The other models of issue 13 (GPT-2
small, BERT-base) are not built yet.
"""
from lucid.models._registry import create_model, list_models, register_model
from lucid.models import densenet, efficientnet, lstm, mobilenet, resnet, vision_transformer  # noqa: F401
from lucid.models.lstm import LSTMClassifier, lstm_classifier
from lucid.models.densenet import DenseNet, densenet121
from lucid.models.efficientnet import EfficientNet, efficientnet_b0
from lucid.models.mobilenet import MobileNetV2, mobilenet_v2
from lucid.models.resnet import ResNet, resnet18, resnet50
from lucid.models.vision_transformer import VisionTransformer, vit_b_16

__all__ = ["create_model", "list_models", "register_model", "DenseNet", "EfficientNet", "LSTMClassifier", "MobileNetV2",
           "ResNet", "VisionTransformer", "densenet121", "efficientnet_b0", "lstm_classifier", "mobilenet_v2",
           "resnet18", "resnet50", "vit_b_16"]
