"""verify test script: word_language_model's parts made apart (an Embedding, an LSTM and a Linear,
no module holding them), one optimizer over all three. The Embedding's and the Linear's `weight`
have one name and one shape; each must still be compared with itself."""

import torch
import torch.nn as nn

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
encoder = nn.Embedding(10, 6).to(device)
rnn = nn.LSTM(6, 6).to(device)
decoder = nn.Linear(6, 10).to(device)
params = [*encoder.parameters(), *rnn.parameters(), *decoder.parameters()]
optimizer = torch.optim.SGD(params, lr=0.1)
tokens = torch.randint(0, 10, (5, 4))  # the seed verify sets decides them
for step in range(3):
    x, y = tokens[:-1].to(device), tokens[1:].to(device)
    optimizer.zero_grad()
    output, _ = rnn(encoder(x))
    loss = nn.functional.cross_entropy(decoder(output).view(-1, 10), y.reshape(-1))
    loss.backward()
    optimizer.step()
    print(f"step {step} loss {loss.item():.6f}")
