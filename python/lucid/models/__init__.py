"""lucid.models: the seed's benchmark models as a model library (issue 13).

`create_model(name, **cfg)` builds a registered model; `list_models()` names them. State-dict
keys follow the reference implementations (torchvision for the vision models, Hugging Face
transformers for GPT-2 and BERT), so their safetensors files load as they are:
`model.load_state_dict(lucid.load("resnet18.safetensors"))`.
Each family lives in its own module and registers its constructors with `register_model`.

Built so far: ResNet-18 and ResNet-50 (`resnet.py`), MobileNet-v2 (`mobilenet.py`),
EfficientNet-B0 (`efficientnet.py`), DenseNet-121 (`densenet.py`), ViT-B/16
(`vision_transformer.py`), the LSTM classifier (`lstm.py`), GPT-2 small (`gpt2.py`, HF's
GPT2LMHeadModel) and the BERT-base encoder (`bert.py`, HF's BertModel).
"""
from lucid.models._registry import create_model, list_models, register_model
from lucid.models import bert, densenet, efficientnet, gpt2, lstm, mobilenet, resnet, vision_transformer  # noqa: F401
from lucid.models.bert import BertModel, bert_base
from lucid.models.gpt2 import GPT2LMHeadModel, gpt2
from lucid.models.lstm import LSTMClassifier, lstm_classifier
from lucid.models.densenet import DenseNet, densenet121
from lucid.models.efficientnet import EfficientNet, efficientnet_b0
from lucid.models.mobilenet import MobileNetV2, mobilenet_v2
from lucid.models.resnet import ResNet, resnet18, resnet50
from lucid.models.vision_transformer import VisionTransformer, vit_b_16

__all__ = ["create_model", "list_models", "register_model", "BertModel", "DenseNet", "EfficientNet", "GPT2LMHeadModel",
           "LSTMClassifier", "MobileNetV2", "ResNet", "VisionTransformer", "bert_base", "densenet121",
           "efficientnet_b0", "gpt2", "lstm_classifier", "mobilenet_v2", "resnet18", "resnet50", "vit_b_16"]
