# Sample model: LSTM word-level language model (pytorch/examples "word_language_model" shape) trained
# with truncated BPTT on a synthetic Markov-chain corpus.
# Exercises: --cuda flag, torch.cuda.manual_seed(), torch.device("cuda" if args.cuda else "cpu"),
#   hidden.cuda() on recurrent state, clip_grad_norm_, manual SGD update, whole-model torch.save /
#   torch.load(map_location=device), rnn.flatten_parameters() (a cuDNN idiom).
import argparse
import math
import os
import tempfile
import time

import torch
import torch.nn as nn

parser = argparse.ArgumentParser(description='PyTorch LSTM Language Model (synthetic corpus)')
parser.add_argument('--model', type=str, default='LSTM',
                    help='type of recurrent net (RNN_TANH, RNN_RELU, LSTM, GRU)')
parser.add_argument('--vocab', type=int, default=50, help='size of the synthetic vocabulary')
parser.add_argument('--emsize', type=int, default=32, help='size of word embeddings')
parser.add_argument('--nhid', type=int, default=48, help='number of hidden units per layer')
parser.add_argument('--nlayers', type=int, default=2, help='number of layers')
parser.add_argument('--lr', type=float, default=20, help='initial learning rate')
parser.add_argument('--clip', type=float, default=0.25, help='gradient clipping')
parser.add_argument('--epochs', type=int, default=1, help='upper epoch limit')
parser.add_argument('--steps', type=int, default=None,
                    help='stop after this many BPTT batches in total')
parser.add_argument('--batch_size', type=int, default=8, metavar='N', help='batch size')
parser.add_argument('--bptt', type=int, default=12, help='sequence length')
parser.add_argument('--dropout', type=float, default=0.2,
                    help='dropout applied to layers (0 = no dropout)')
parser.add_argument('--tied', action='store_true',
                    help='tie the word embedding and softmax weights')
parser.add_argument('--seed', type=int, default=1111, help='random seed')
parser.add_argument('--cuda', action='store_true', default=False, help='use CUDA')
parser.add_argument('--log-interval', type=int, default=5, metavar='N', help='report interval')
parser.add_argument('--out-dir', type=str, default=None,
                    help='directory to save the final model (default: a temp dir)')
args = parser.parse_args()

# Set the random seed manually for reproducibility.
torch.manual_seed(args.seed)
if torch.cuda.is_available():
    if not args.cuda:
        print("WARNING: You have a CUDA device, so you should probably run with --cuda")
    torch.cuda.manual_seed(args.seed)
elif args.cuda:
    print("WARNING: --cuda was given but CUDA is not available; falling back to the CPU")
    args.cuda = False

device = torch.device("cuda" if args.cuda else "cpu")


###############################################################################
# Load data
###############################################################################

def make_corpus(n_tokens, vocab, seed):
    """A sparse first-order Markov chain: each word has 3 likely successors, so there is something to learn."""
    g = torch.Generator().manual_seed(seed)
    succ = torch.randint(0, vocab, (vocab, 3), generator=g)
    toks = torch.empty(n_tokens, dtype=torch.long)
    cur = 0
    choice = torch.randint(0, 4, (n_tokens,), generator=g)
    noise = torch.randint(0, vocab, (n_tokens,), generator=g)
    for i in range(n_tokens):
        c = int(choice[i])
        cur = int(noise[i]) if c == 3 else int(succ[cur, c])
        toks[i] = cur
    return toks


def batchify(data, bsz):
    # Work out how cleanly we can divide the dataset into bsz parts.
    nbatch = data.size(0) // bsz
    # Trim off any extra elements that wouldn't cleanly fit (remainders).
    data = data.narrow(0, 0, nbatch * bsz)
    # Evenly divide the data across the bsz batches.
    data = data.view(bsz, -1).t().contiguous()
    return data.to(device)


train_data = batchify(make_corpus(3000, args.vocab, args.seed), args.batch_size)
val_data = batchify(make_corpus(600, args.vocab, args.seed + 1), 4)


###############################################################################
# Build the model
###############################################################################

class RNNModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, rnn_type, ntoken, ninp, nhid, nlayers, dropout=0.5, tie_weights=False):
        super(RNNModel, self).__init__()
        self.ntoken = ntoken
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        if rnn_type in ['LSTM', 'GRU']:
            self.rnn = getattr(nn, rnn_type)(ninp, nhid, nlayers, dropout=dropout)
        else:
            nonlinearity = {'RNN_TANH': 'tanh', 'RNN_RELU': 'relu'}[rnn_type]
            self.rnn = nn.RNN(ninp, nhid, nlayers, nonlinearity=nonlinearity, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        if tie_weights:
            if nhid != ninp:
                raise ValueError('When using the tied flag, nhid must be equal to emsize')
            self.decoder.weight = self.encoder.weight
        self.init_weights()
        self.rnn_type = rnn_type
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        nn.init.uniform_(self.encoder.weight, -initrange, initrange)
        nn.init.zeros_(self.decoder.bias)
        nn.init.uniform_(self.decoder.weight, -initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output).view(-1, self.ntoken)
        return nn.functional.log_softmax(decoded, dim=1), hidden

    def init_hidden(self, bsz):
        # built on the CPU; the training loop moves it to the GPU when --cuda is set
        if self.rnn_type == 'LSTM':
            return (torch.zeros(self.nlayers, bsz, self.nhid),
                    torch.zeros(self.nlayers, bsz, self.nhid))
        return torch.zeros(self.nlayers, bsz, self.nhid)


def to_device_hidden(h):
    """Move recurrent state onto the GPU (tuple for LSTM, tensor otherwise)."""
    if not args.cuda:
        return h
    if isinstance(h, tuple):
        return tuple(v.cuda() for v in h)
    return h.cuda()


model = RNNModel(args.model, args.vocab, args.emsize, args.nhid, args.nlayers,
                 args.dropout, args.tied).to(device)
criterion = nn.NLLLoss()


###############################################################################
# Training code
###############################################################################

def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def get_batch(source, i):
    seq_len = min(args.bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].view(-1)
    return data, target


def evaluate(data_source, bsz):
    # Turn on evaluation mode which disables dropout.
    model.eval()
    total_loss = 0.
    hidden = to_device_hidden(model.init_hidden(bsz))
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, args.bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model(data, hidden)
            hidden = repackage_hidden(hidden)
            total_loss += len(data) * criterion(output, targets).item()
    return total_loss / (len(data_source) - 1)


global_step = 0


def train(epoch):
    global global_step
    # Turn on training mode which enables dropout.
    model.train()
    total_loss = 0.
    start_time = time.time()
    hidden = to_device_hidden(model.init_hidden(args.batch_size))
    for batch, i in enumerate(range(0, train_data.size(0) - 1, args.bptt)):
        if args.steps is not None and global_step >= args.steps:
            break
        data, targets = get_batch(train_data, i)
        # Starting each batch, we detach the hidden state from how it was previously produced.
        # If we didn't, the model would try backpropagating all the way to start of the dataset.
        model.zero_grad()
        hidden = repackage_hidden(hidden)
        output, hidden = model(data, hidden)
        loss = criterion(output, targets)
        loss.backward()

        # `clip_grad_norm` helps prevent the exploding gradient problem in RNNs / LSTMs.
        torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
        for p in model.parameters():
            p.data.add_(p.grad, alpha=-lr)

        global_step += 1
        print(f"step={global_step} loss={loss.item()!r}", flush=True)
        total_loss += loss.item()

        if batch % args.log_interval == 0 and batch > 0:
            cur_loss = total_loss / args.log_interval
            elapsed = time.time() - start_time
            print('| epoch {:3d} | {:5d}/{:5d} batches | lr {:02.2f} | ms/batch {:5.2f} | '
                  'loss {:5.2f} | ppl {:8.2f}'.format(
                      epoch, batch, len(train_data) // args.bptt, lr,
                      elapsed * 1000 / args.log_interval, cur_loss, math.exp(cur_loss)))
            total_loss = 0
            start_time = time.time()


# Loop over epochs.
lr = args.lr
best_val_loss = None
out_dir = args.out_dir or tempfile.mkdtemp(prefix="word_lm_")
os.makedirs(out_dir, exist_ok=True)
save_path = os.path.join(out_dir, 'model.pt')
n_batches = len(range(0, train_data.size(0) - 1, args.bptt))
epochs = args.epochs if args.steps is None else max(args.epochs, math.ceil(args.steps / n_batches))

# At any point you can hit Ctrl + C to break out of training early.
try:
    for epoch in range(1, epochs + 1):
        epoch_start_time = time.time()
        train(epoch)
        val_loss = evaluate(val_data, 4)
        print('-' * 89)
        print('| end of epoch {:3d} | time: {:5.2f}s | valid loss {:5.2f} | '
              'valid ppl {:8.2f}'.format(epoch, (time.time() - epoch_start_time),
                                         val_loss, math.exp(val_loss)))
        print('-' * 89)
        # Save the model if the validation loss is the best we've seen so far.
        if not best_val_loss or val_loss < best_val_loss:
            with open(save_path, 'wb') as f:
                torch.save(model, f)
            best_val_loss = val_loss
        else:
            # Anneal the learning rate if no improvement has been seen in the validation dataset.
            lr /= 4.0
except KeyboardInterrupt:
    print('-' * 89)
    print('Exiting from training early')

# Load the best saved model.
with open(save_path, 'rb') as f:
    model = torch.load(f, map_location=device, weights_only=False)
    # after load the rnn params are not a continuous chunk of memory
    # this makes them a continuous chunk, and will speed up forward pass
    # Currently, only rnn model supports flatten_parameters function.
    if args.model in ['RNN_TANH', 'RNN_RELU', 'LSTM', 'GRU']:
        model.rnn.flatten_parameters()

# Run on validation data again with the reloaded model.
val_loss = evaluate(val_data, 4)
print('=' * 89)
print('| End of training | reloaded val loss {:5.2f} | val ppl {:8.2f}'.format(
    val_loss, math.exp(val_loss)))
print('=' * 89)
