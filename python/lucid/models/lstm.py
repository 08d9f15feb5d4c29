"""The seed's LSTM classifier: an nn.LSTM (batch_first) over a sequence of feature vectors, its
last time step's hidden state to a linear head (keys lstm.weight_ih_l0, ..., fc.weight, fc.bias,
torch's nn.LSTM names). The benchmark's size is 50 steps x 16 features, 64 hidden units.
"""
import lucid.nn as nn

from lucid.models._registry import register_model


class LSTMClassifier(nn.Module):
    def __init__(self, input_size=16, hidden_size=64, num_layers=1, num_classes=10, dropout=0.0,
                 bidirectional=False):
        super().__init__()
        self.lstm = nn.LSTM(input_size, hidden_size, num_layers, batch_first=True, dropout=dropout,
                            bidirectional=bidirectional)
        self.fc = nn.Linear(hidden_size * (2 if bidirectional else 1), num_classes)

    def forward(self, x):
        out, _ = self.lstm(x)
        return self.fc(out[:, -1])


@register_model
def lstm_classifier(**cfg):
    """LSTM classifier: nn.LSTM(16, 64, batch_first) and a linear head on the last step."""
    return LSTMClassifier(**cfg)
