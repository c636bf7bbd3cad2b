"""The recurrent cores over a learner's sequence with their backward passes written out
through time.

A learner trains a recurrent actor-critic on chunks of ``L`` steps of ``B`` envs (truncated
backpropagation through time). Under autograd each step of the core is a dozen small
element-wise nodes and one product, and the backward pass walks them one by one: on a CPU
its cost is the nodes' overhead and ``L`` products for the recurrent weight's gradient,
each as large as the weight. Here the forward runs as the step-by-step core does (the same
numbers: :func:`~neuroplug.nets.layers.gru_gates`, :func:`~neuroplug.nets.layers.lstm_gates`),
keeping each step's gates, and the
backward runs the steps in reverse with the gradients of the gates written out, then
forms the recurrent weight's gradient in one product over all ``L * B`` rows (what cuDNN's
RNN does).
"""

from __future__ import annotations

import torch

from neuroplug.nets.layers import ACTIVATIONS, gru_gates, lstm_gates


class GRUThroughTime(torch.autograd.Function):
    """``(outputs (L, B, H), final state (B, H))`` of a GRU from its input gates
    ``(L, B, 3H)``, its state before the first step ``(B, H)``, ``keep`` ``(L, B, 1)``
    (0 where a step starts an episode) and its recurrent weight ``(H, 3H)`` and bias
    ``(3H,)``; differentiable in all but ``keep``."""

    @staticmethod
    def forward(ctx, input_gates, state, keep, recurrent_weight, recurrent_bias):
        size = state.shape[-1]
        steps = len(input_gates)
        previous = input_gates.new_empty(steps, *state.shape)
        state_new_gates = input_gates.new_empty(steps, *state.shape)
        gates = input_gates.new_empty(steps, 3, *state.shape)  # r, z, n of each step
        outputs = input_gates.new_empty(steps, *state.shape)
        for step in range(steps):
            previous[step] = state * keep[step]
            state_gates = torch.addmm(recurrent_bias, previous[step], recurrent_weight)
            reset, update, new = gru_gates(input_gates[step], state_gates, previous[step])
            state = new + update * (previous[step] - new)  # as gru_update
            gates[step, 0], gates[step, 1], gates[step, 2] = reset, update, new
            state_new_gates[step] = state_gates[:, 2 * size :]
            outputs[step] = state
        ctx.save_for_backward(previous, state_new_gates, gates, keep, recurrent_weight)
        return outputs, state.clone()

    @staticmethod
    def backward(ctx, output_grads, final_state_grad):
        previous, state_new_gates, gates, keep, recurrent_weight = ctx.saved_tensors
        steps, rows, size = previous.shape
        input_gate_grads = previous.new_empty(steps, rows, 3 * size)
        state_gate_grads = previous.new_empty(steps, rows, 3 * size)
        carried = final_state_grad  # autograd gives zeros for an unused output
        for step in reversed(range(steps)):
            reset, update, new = gates[step, 0], gates[step, 1], gates[step, 2]
            grad = carried + output_grads[step]
            # h = n + z (h_prev - n)
            new_pre = grad * (1 - update) * (1 - new * new)  # through tanh
            update_pre = grad * (previous[step] - new) * update * (1 - update)  # sigmoid
            reset_pre = new_pre * state_new_gates[step] * reset * (1 - reset)
            input_gate_grads[step, :, :size] = reset_pre
            input_gate_grads[step, :, size : 2 * size] = update_pre
            input_gate_grads[step, :, 2 * size :] = new_pre
            state_gate_grads[step, :, : 2 * size] = input_gate_grads[step, :, : 2 * size]
            state_gate_grads[step, :, 2 * size :] = new_pre * reset
            previous_grad = torch.addmm(grad * update, state_gate_grads[step], recurrent_weight.t())
            carried = previous_grad * keep[step]
        flat_grads = state_gate_grads.reshape(steps * rows, 3 * size)
        weight_grad = previous.reshape(steps * rows, size).t() @ flat_grads
        return input_gate_grads, carried, None, weight_grad, flat_grads.sum(0)


class LSTMThroughTime(torch.autograd.Function):
    """``(outputs (L, B, H), final state (B, 2H))`` of an LSTM (its state ``h`` and ``c``
    side by side) from its input gates ``(L, B, 4H)``, its state before the first step,
    ``keep`` ``(L, B, 1)`` and its recurrent weight ``(H, 4H)`` and bias ``(4H,)``;
    differentiable in all but ``keep``."""

    @staticmethod
    def forward(ctx, input_gates, state, keep, recurrent_weight, recurrent_bias):
        steps, size = len(input_gates), state.shape[-1] // 2
        previous = input_gates.new_empty(steps, *state.shape)  # h and c before each step
        gates = input_gates.new_empty(steps, 5, len(state), size)  # i, f, g, o, tanh(c')
        outputs = input_gates.new_empty(steps, len(state), size)
        for step in range(steps):
            previous[step] = state * keep[step]
            hidden, cell = previous[step, :, :size], previous[step, :, size:]
            summed = input_gates[step] + torch.addmm(recurrent_bias, hidden, recurrent_weight)
            input_gate, forget, candidate, output = lstm_gates(summed)
            cell = forget * cell + input_gate * candidate  # as lstm_update
            squashed = ACTIVATIONS["tanh"](cell)
            outputs[step] = output * squashed
            gates[step] = torch.stack((input_gate, forget, candidate, output, squashed))
            state = torch.cat((outputs[step], cell), dim=-1)
        ctx.save_for_backward(previous, gates, keep, recurrent_weight)
        return outputs, state

    @staticmethod
    def backward(ctx, output_grads, final_state_grad):
        previous, gates, keep, recurrent_weight = ctx.saved_tensors
        steps, rows, width = previous.shape
        size = width // 2
        gate_grads = previous.new_empty(steps, rows, 4 * size)
        carried = final_state_grad  # autograd gives zeros for an unused output
        for step in reversed(range(steps)):
            input_gate, forget, candidate, output, squashed = gates[step].unbind(0)
            hidden_grad = carried[:, :size] + output_grads[step]
            # h' = o tanh(c'), c' = f c + i g
            cell_grad = carried[:, size:] + hidden_grad * output * (1 - squashed * squashed)
            grads = gate_grads[step]
            grads[:, :size] = cell_grad * candidate * input_gate * (1 - input_gate)
            grads[:, size : 2 * size] = cell_grad * previous[step, :, size:] * forget * (1 - forget)
            grads[:, 2 * size : 3 * size] = cell_grad * input_gate * (1 - candidate * candidate)
            grads[:, 3 * size :] = hidden_grad * squashed * output * (1 - output)
            carried = torch.cat((grads @ recurrent_weight.t(), cell_grad * forget), dim=-1)
            carried = carried * keep[step]
        flat_grads = gate_grads.reshape(steps * rows, 4 * size)
        weight_grad = previous[:, :, :size].reshape(steps * rows, size).t() @ flat_grads
        return gate_grads, carried, None, weight_grad, flat_grads.sum(0)
