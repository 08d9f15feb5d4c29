"""A convolutional VAE: Conv2d encoder to (mu, logvar), the reparameterisation z = mu + eps * std,
a ConvTranspose2d decoder with a Sigmoid, the summed BCE reconstruction loss plus the KL term,
Adam, and a decode of fixed latents at the end. eps is drawn by a seeded NumPy generator and
passed in (deterministic mode: tests/porting), where a training script would call randn_like."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

COMPILE = None  # set by the harness: None, "compile" or "fused"
LATENT = 4


class VAE(nn.Module):
    def __init__(self, latent=LATENT):
        super().__init__()
        self.encoder = nn.Sequential(
            nn.Conv2d(1, 8, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(8, 16, 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(16 * 4 * 4, 2 * latent))
        self.decoder = nn.Sequential(
            nn.Linear(latent, 16 * 4 * 4), nn.ReLU(), nn.Unflatten(1, (16, 4, 4)),
            nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1), nn.ReLU(),
            nn.ConvTranspose2d(8, 1, 4, stride=2, padding=1), nn.Sigmoid())

    def forward(self, x, eps):
        mu, logvar = self.encoder(x).chunk(2, dim=1)
        z = mu + eps * torch.exp(0.5 * logvar)
        return self.decoder(z), mu, logvar


def vae_loss(out, x):
    recon, mu, logvar = out
    bce = F.binary_cross_entropy(recon, x, reduction="sum")
    kld = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())
    return (bce + kld) / x.shape[0]


def build():
    torch.manual_seed(0)
    return VAE()


def main(model):
    rng = np.random.default_rng(0)
    dt = torch.get_default_dtype()
    data = torch.sigmoid(torch.tensor(rng.standard_normal((32, 1, 16, 16)) * 2, dtype=dt))
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    net = torch.compile(model) if COMPILE == "compile" else model
    if COMPILE == "fused":
        step = torch.compile.fused_step(model, vae_loss, opt)
    losses = []
    for epoch in range(3):
        for i in range(0, 32, 8):
            x = data[i:i + 8]
            eps = torch.tensor(rng.standard_normal((8, LATENT)), dtype=dt)
            if COMPILE == "fused":
                loss = step((x, eps), x)
            else:
                opt.zero_grad()
                loss = vae_loss(net(x, eps), x)
                loss.backward()
                opt.step()
            losses.append(loss.item())
    with torch.no_grad():
        z = torch.tensor(rng.standard_normal((3, LATENT)), dtype=dt)
        samples = model.decoder(z)
        recon, mu, _ = net(data[:4], torch.zeros(4, LATENT))
    return {"losses": losses, "samples": samples, "recon": recon, "mu": mu}
