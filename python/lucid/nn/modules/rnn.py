"""RNN, LSTM, GRU and their cells, with torch's math, gate order (LSTM i,f,g,o; GRU r,z,n),
parameter names (weight_ih_l0, ..., _reverse) and init (U(-1/sqrt(H), 1/sqrt(H))).

LSTM and GRU on float32/float64 CPU tensors run each (layer, direction) as one linear over all
time steps (the input projection) plus one fused recurrence op (LstmRecurrence / GruRecurrence,
csrc/lucid/ops/nn_rnn.cpp: per step a small GEMM and a fused gate kernel; the backward op runs the
reversed recurrence and the weight gradients are one GEMM), so lucid.compile records a few nodes
per layer instead of ~10 per step. Multi-layer, bidirectional and dropout between layers stay here.
RNN (tanh/relu), the cells, other dtypes, CUDA tensors and PackedSequence input keep the per-step
Python composite (linear + chunk + sigmoid/tanh).

RNN, LSTM and GRU also take a PackedSequence (nn.utils.rnn) and return one, as torch: each time
step runs on the sequences still running (batch_sizes[t] of them), so h_n holds each sequence's
state at its own last step (the first one for the reverse direction); hx and h_n are in the
caller's batch order (permuted by sorted_indices / unsorted_indices)."""
import math

import lucid
from lucid.nn import functional as F
from lucid.nn import init
from lucid.nn.modules.module import Module
from lucid.nn.parameter import Parameter
from lucid.nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCell", "LSTMCell", "GRUCell"]


def _lstm_cell(x_proj, h, c, w_hh, b_hh):
    gates = x_proj + F.linear(h, w_hh, b_hh)
    i, f, g, o = gates.chunk(4, -1)
    i = lucid.sigmoid(i)
    f = lucid.sigmoid(f)
    g = lucid.tanh(g)
    o = lucid.sigmoid(o)
    c = f * c + i * g
    h = o * lucid.tanh(c)
    return h, c


def _gru_cell(x_proj, h, w_hh, b_hh):
    h_proj = F.linear(h, w_hh, b_hh)
    xr, xz, xn = x_proj.chunk(3, -1)
    hr, hz, hn = h_proj.chunk(3, -1)
    r = lucid.sigmoid(xr + hr)
    z = lucid.sigmoid(xz + hz)
    n = lucid.tanh(xn + r * hn)
    return (1 - z) * n + z * h


def _rnn_cell(x_proj, h, w_hh, b_hh, nonlinearity):
    pre = x_proj + F.linear(h, w_hh, b_hh)
    return lucid.tanh(pre) if nonlinearity == "tanh" else F.relu(pre)


def _state_slice(state, start, stop):
    """Rows start:stop of a state (h, or the (h, c) pair of an LSTM)."""
    if isinstance(state, tuple):
        return tuple(s[start:stop] for s in state)
    return state[start:stop]


def _state_cat(states):
    if isinstance(states[0], tuple):
        return tuple(lucid.cat(list(parts), 0) for parts in zip(*states))
    return lucid.cat(states, 0)


class RNNBase(Module):
    _gate_mult = {"LSTM": 4, "GRU": 3, "RNN_TANH": 1, "RNN_RELU": 1}

    def __init__(self, mode, input_size, hidden_size, num_layers=1, bias=True, batch_first=False, dropout=0.0,
                 bidirectional=False, proj_size=0, device=None, dtype=None):
        super().__init__()
        if proj_size != 0:
            raise NotImplementedError(f"{type(self).__name__}: proj_size is not supported")
        if not 0 <= dropout <= 1:
            raise ValueError("dropout should be a number in range [0, 1] representing the probability of an "
                             "element being zeroed")
        if not isinstance(hidden_size, int) or hidden_size <= 0:
            raise ValueError("hidden_size must be a positive integer")
        if num_layers <= 0:
            raise ValueError("num_layers must be greater than or equal to 1")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        num_directions = 2 if bidirectional else 1
        gate_size = self._gate_mult[mode] * hidden_size
        self._flat_weights_names = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input_size = input_size if layer == 0 else hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate_size, layer_input_size), (gate_size, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                for n, s in zip(names, shapes):
                    setattr(self, n, Parameter(lucid.empty(s, dtype=dtype)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    @property
    def _flat_weights(self):
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self):
        return [[getattr(self, n) for n in self._layer_names(layer, d)] for layer in range(self.num_layers)
                for d in range(2 if self.bidirectional else 1)]

    def _layer_names(self, layer, direction):
        suffix = "_reverse" if direction == 1 else ""
        names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
        if self.bias:
            names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
        return names

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.num_layers != 1:
            s += ", num_layers={num_layers}"
        if self.bias is not True:
            s += ", bias={bias}"
        if self.batch_first is not False:
            s += ", batch_first={batch_first}"
        if self.dropout != 0:
            s += ", dropout={dropout}"
        if self.bidirectional is not False:
            s += ", bidirectional={bidirectional}"
        return s.format(**self.__dict__)

    def _weights(self, layer, direction):
        names = self._layer_names(layer, direction)
        w_ih, w_hh = getattr(self, names[0]), getattr(self, names[1])
        b_ih = getattr(self, names[2]) if self.bias else None
        b_hh = getattr(self, names[3]) if self.bias else None
        return w_ih, w_hh, b_ih, b_hh

    def _cell(self, xp, state, w_hh, b_hh):
        """One time step: the new state ((h, c) for LSTM, h otherwise)."""
        if self.mode == "LSTM":
            return _lstm_cell(xp, state[0], state[1], w_hh, b_hh)
        if self.mode == "GRU":
            return _gru_cell(xp, state, w_hh, b_hh)
        return _rnn_cell(xp, state, w_hh, b_hh, "tanh" if self.mode == "RNN_TANH" else "relu")

    def _fusable(self, x):
        """LSTM / GRU on float32 or float64 CPU tensors run the fused recurrence ops; other dtypes
        and CUDA (no kernel yet: tests/python/cuda_pending_ops.txt) keep the per-step composite."""
        return self.mode in ("LSTM", "GRU") and x.dtype in (lucid.float32, lucid.float64) and not x.is_cuda

    def _fused_layer(self, layer_input, state, w_ih, w_hh, b_ih, b_hh, reverse):
        """One direction of one LSTM / GRU layer on the fused recurrence ops: one linear for the
        input projection of every step (LSTM folds both biases into it; GRU keeps b_hh inside the
        recurrence, where r multiplies its n part), then the recurrence. Returns y (L, N, H) and
        the final state ((h_n, c_n) for LSTM)."""
        last = 0 if reverse else layer_input.shape[0] - 1
        if self.mode == "LSTM":
            bias = None if b_ih is None else b_ih + b_hh
            x_proj = F.linear(layer_input, w_ih, bias)
            y, cells = lucid._C._nn_lstm_recurrence(x_proj, state[0], state[1], w_hh, reverse)
            return y, (y[last], cells[last])
        x_proj = F.linear(layer_input, w_ih, b_ih)
        y = lucid._C._nn_gru_recurrence(x_proj, state, w_hh, b_hh, reverse)
        return y, y[last]

    def _run(self, input, hx):
        """input (L, N, H_in); hx: list of per-(layer, direction) states. Returns output, new states."""
        num_directions = 2 if self.bidirectional else 1
        seq_len = input.shape[0]
        layer_input = input
        new_states = []
        for layer in range(self.num_layers):
            dir_outputs = []
            for d in range(num_directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                state = hx[layer * num_directions + d]
                if self._fusable(layer_input):
                    out, state = self._fused_layer(layer_input, state, w_ih, w_hh, b_ih, b_hh, d == 1)
                else:
                    x_proj = F.linear(layer_input, w_ih, b_ih)  # all time steps at once
                    steps = range(seq_len - 1, -1, -1) if d == 1 else range(seq_len)
                    outs = [None] * seq_len
                    for t in steps:
                        state = self._cell(x_proj[t], state, w_hh, b_hh)
                        outs[t] = state[0] if self.mode == "LSTM" else state
                    out = lucid.stack(outs, 0)
                dir_outputs.append(out)
                new_states.append(state)
            layer_input = dir_outputs[0] if num_directions == 1 else lucid.cat(dir_outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, new_states

    def _run_packed(self, data, sizes, hx):
        """data (sum(sizes), H_in) packed time-major; sizes: batch size per step; hx: per-(layer,
        direction) states over sizes[0] sequences. Returns packed output, final states (torch's
        PackedLayer / ReversedPackedLayer)."""
        num_directions = 2 if self.bidirectional else 1
        offsets = [0]
        for bs in sizes:
            offsets.append(offsets[-1] + bs)
        layer_input = data
        new_states = []
        for layer in range(self.num_layers):
            dir_outputs = []
            for d in range(num_directions):
                w_ih, w_hh, b_ih, b_hh = self._weights(layer, d)
                x_proj = F.linear(layer_input, w_ih, b_ih)
                state = hx[layer * num_directions + d]
                run = self._packed_reverse if d == 1 else self._packed_forward
                out, state = run(x_proj, sizes, offsets, state, w_hh, b_hh)
                dir_outputs.append(out)
                new_states.append(state)
            layer_input = dir_outputs[0] if num_directions == 1 else lucid.cat(dir_outputs, -1)
            if self.dropout > 0 and self.training and layer < self.num_layers - 1:
                layer_input = F.dropout(layer_input, self.dropout, True)
        return layer_input, new_states

    def _packed_forward(self, x_proj, sizes, offsets, state, w_hh, b_hh):
        # A sequence that ends at step t leaves the batch there: its state is final.
        outs, finals, last = [], [], sizes[0]
        for t, bs in enumerate(sizes):
            if bs < last:
                finals.append(_state_slice(state, bs, last))
                state = _state_slice(state, 0, bs)
            last = bs
            state = self._cell(x_proj[offsets[t]:offsets[t + 1]], state, w_hh, b_hh)
            outs.append(state[0] if self.mode == "LSTM" else state)
        finals.append(state)
        return lucid.cat(outs, 0), _state_cat(finals[::-1])

    def _packed_reverse(self, x_proj, sizes, offsets, state0, w_hh, b_hh):
        # Backwards in time a sequence joins the batch at its last step, from its initial state.
        outs, last = [None] * len(sizes), sizes[-1]
        state = _state_slice(state0, 0, last)
        for t in range(len(sizes) - 1, -1, -1):
            bs = sizes[t]
            if bs > last:
                state = _state_cat([state, _state_slice(state0, last, bs)])
            last = bs
            state = self._cell(x_proj[offsets[t]:offsets[t + 1]], state, w_hh, b_hh)
            outs[t] = state[0] if self.mode == "LSTM" else state
        return lucid.cat(outs, 0), state

    def forward(self, input, hx=None):
        """(output, h_n or (h_n, c_n)) for padded or packed input, as torch's RNN/LSTM/GRU forward."""
        is_lstm = self.mode == "LSTM"
        if isinstance(input, PackedSequence):
            out, new = self._forward_packed(input, hx, is_lstm)
            is_batched = True
        else:
            x, states, is_batched = self._prepare(input, hx, is_lstm)
            out, new = self._run(x, states)
            out = self._finish(out, is_batched)
        if is_lstm:
            h_n = lucid.stack([s[0] for s in new], 0)
            c_n = lucid.stack([s[1] for s in new], 0)
        else:
            h_n, c_n = lucid.stack(new, 0), None
        if isinstance(input, PackedSequence) and input.unsorted_indices is not None:
            h_n = h_n.index_select(1, input.unsorted_indices)
            c_n = c_n.index_select(1, input.unsorted_indices) if is_lstm else None
        if not is_batched:
            h_n = h_n.squeeze(1)
            c_n = c_n.squeeze(1) if is_lstm else None
        return out, ((h_n, c_n) if is_lstm else h_n)

    def _forward_packed(self, packed, hx, is_lstm):
        data, sizes = packed.data, packed._sizes
        name = type(self).__name__
        if data.dim() != 2:
            raise RuntimeError(f"{name}: a packed input's data should be 2-D (sum of lengths, input_size), got "
                               f"{data.dim()}-D")
        if data.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {data.shape[-1]}")
        n_states = self.num_layers * (2 if self.bidirectional else 1)
        expected = (n_states, sizes[0], self.hidden_size)

        def prep(h):
            if h is None:
                return lucid.full(expected, 0.0, dtype=data.dtype, device=data.device)
            if packed.sorted_indices is not None:
                h = h.index_select(1, packed.sorted_indices)
            if tuple(h.shape) != expected:
                raise RuntimeError(f"Expected hidden size {expected}, got {list(h.shape)}")
            return h

        if is_lstm:
            h0, c0 = (None, None) if hx is None else hx
            h0, c0 = prep(h0), prep(c0)
            states = [(h0[i], c0[i]) for i in range(n_states)]
        else:
            h0 = prep(hx)
            states = [h0[i] for i in range(n_states)]
        out, new = self._run_packed(data, sizes, states)
        return packed._with_data(out), new

    def _prepare(self, input, hx, is_lstm):
        is_batched = input.dim() == 3
        if input.dim() not in (2, 3):
            raise ValueError(f"{type(self).__name__}: Expected input to be 2D or 3D, got {input.dim()}D instead")
        if not is_batched:
            input = input.unsqueeze(1)
        elif self.batch_first:
            input = input.transpose(0, 1)
        if input.shape[-1] != self.input_size:
            raise RuntimeError(f"input.size(-1) must be equal to input_size. Expected {self.input_size}, "
                               f"got {input.shape[-1]}")
        batch = input.shape[1]
        num_directions = 2 if self.bidirectional else 1
        n_states = self.num_layers * num_directions
        expected = (n_states, batch, self.hidden_size)

        def prep(h, what):
            if h is None:
                return lucid.full(expected, 0.0, dtype=input.dtype, device=input.device)
            if not is_batched:
                if h.dim() != 2:
                    raise RuntimeError(f"For unbatched 2-D input, {what} should also be 2-D but got {h.dim()}-D tensor")
                h = h.unsqueeze(1)
            if tuple(h.shape) != expected:
                raise RuntimeError(f"Expected hidden size {expected}, got {list(h.shape)}")
            return h

        if is_lstm:
            if hx is None:
                h0 = c0 = prep(None, "hx")
            else:
                h0, c0 = prep(hx[0], "hx[0]"), prep(hx[1], "hx[1]")
            states = [(h0[i], c0[i]) for i in range(n_states)]
        else:
            h0 = prep(hx, "hx")
            states = [h0[i] for i in range(n_states)]
        return input, states, is_batched

    def _finish(self, output, is_batched):
        if not is_batched:
            return output.squeeze(1)
        if self.batch_first:
            return output.transpose(0, 1)
        return output


class RNN(RNNBase):
    def __init__(self, *args, **kwargs):
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise ValueError(f"Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    def __init__(self, *args, **kwargs):
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    def __init__(self, input_size, hidden_size, bias, num_chunks, device=None, dtype=None):
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        self.weight_ih = Parameter(lucid.empty((num_chunks * hidden_size, input_size), dtype=dtype))
        self.weight_hh = Parameter(lucid.empty((num_chunks * hidden_size, hidden_size), dtype=dtype))
        if bias:
            self.bias_ih = Parameter(lucid.empty((num_chunks * hidden_size,), dtype=dtype))
            self.bias_hh = Parameter(lucid.empty((num_chunks * hidden_size,), dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self):
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self):
        s = "{input_size}, {hidden_size}"
        if self.bias is not True:
            s += ", bias={bias}"
        return s.format(**self.__dict__)

    def _batch(self, input, hx):
        if input.dim() not in (1, 2):
            raise ValueError(f"{type(self).__name__}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        is_batched = input.dim() == 2
        if not is_batched:
            input = input.unsqueeze(0)
        zeros = lucid.full((input.shape[0], self.hidden_size), 0.0, dtype=input.dtype, device=input.device)
        return input, is_batched, zeros


class RNNCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, nonlinearity="tanh", device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 1, device, dtype)
        self.nonlinearity = nonlinearity

    def forward(self, input, hx=None):
        x, is_batched, zeros = self._batch(input, hx)
        h = zeros if hx is None else (hx if is_batched else hx.unsqueeze(0))
        h = _rnn_cell(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh, self.nonlinearity)
        return h if is_batched else h.squeeze(0)


class LSTMCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 4, device, dtype)

    def forward(self, input, hx=None):
        x, is_batched, zeros = self._batch(input, hx)
        if hx is None:
            h, c = zeros, zeros
        else:
            h, c = hx if is_batched else (hx[0].unsqueeze(0), hx[1].unsqueeze(0))
        h, c = _lstm_cell(F.linear(x, self.weight_ih, self.bias_ih), h, c, self.weight_hh, self.bias_hh)
        if not is_batched:
            h, c = h.squeeze(0), c.squeeze(0)
        return h, c


class GRUCell(RNNCellBase):
    def __init__(self, input_size, hidden_size, bias=True, device=None, dtype=None):
        super().__init__(input_size, hidden_size, bias, 3, device, dtype)

    def forward(self, input, hx=None):
        x, is_batched, zeros = self._batch(input, hx)
        h = zeros if hx is None else (hx if is_batched else hx.unsqueeze(0))
        h = _gru_cell(F.linear(x, self.weight_ih, self.bias_ih), h, self.weight_hh, self.bias_hh)
        return h if is_batched else h.squeeze(0)
