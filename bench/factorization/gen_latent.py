#!/usr/bin/env python3
"""A click log whose truth has latent field interactions (issue 37).

Each example is a user, a site, a device and an ad, drawn with power-law
popularity (--popularity, the exponent: 1 by default, 0 uniform). The true
click probability is

    p = sigmoid(b0 + b_user + b_site + b_device + b_ad
                + <U_user, A1_ad> + <S_site, A2_ad> + <D_device, A3_ad>)

with latent vectors of --dim floats: a user x ad, a site x ad and a device x
ad interaction of low rank, which an FM or FFM over the four fields can
represent exactly and a linear model with the true crosses can only learn
pair by pair. The truth is known, so the Bayes predictor's logloss on the
very examples drawn is exact and a model's excess over it needs no
estimate of the noise.

Writes --out (VW text: `1 |user u17 |site s3 |device d1 |ad a99`, label
1 or -1) and --truth (the true p of each line, one per line), and prints
the Bayes logloss (the realized one on the labels drawn, and its
expectation). Pure Python, deterministic in --seed.
"""
import argparse
import bisect
import itertools
import math
import random


def power_law_sampler(rng, n, exponent):
    weights = [1.0 / (i + 1) ** exponent for i in range(n)]
    cumulative = list(itertools.accumulate(weights))
    total = cumulative[-1]
    return lambda: bisect.bisect_left(cumulative, rng.random() * total)


def vectors(rng, n, dim, sigma):
    return [[rng.gauss(0, sigma) for _ in range(dim)] for _ in range(n)]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--examples", type=int, default=200000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--dim", type=int, default=4, help="latent size of the truth")
    ap.add_argument("--users", type=int, default=20000)
    ap.add_argument("--sites", type=int, default=300)
    ap.add_argument("--devices", type=int, default=8)
    ap.add_argument("--ads", type=int, default=2000)
    ap.add_argument("--popularity", type=float, default=1.0,
                    help="the power-law exponent of the users', sites' and ads' popularity "
                         "(0: uniform; devices keep 0.5)")
    ap.add_argument("--bias", type=float, default=-3.0, help="b0: sets the base CTR")
    ap.add_argument("--bias_sigma", type=float, default=0.3)
    ap.add_argument("--latent_sigma", type=float, default=0.6,
                    help="std of each latent float; each interaction's std is about "
                         "sqrt(dim) * latent_sigma^2")
    ap.add_argument("--out", required=True)
    ap.add_argument("--truth", required=True)
    args = ap.parse_args()

    rng = random.Random(args.seed)
    k = args.dim
    sizes = {"user": args.users, "site": args.sites, "device": args.devices, "ad": args.ads}
    bias = {f: [rng.gauss(0, args.bias_sigma) for _ in range(n)] for f, n in sizes.items()}
    user_v = vectors(rng, args.users, k, args.latent_sigma)
    site_v = vectors(rng, args.sites, k, args.latent_sigma)
    device_v = vectors(rng, args.devices, k, args.latent_sigma)
    ad_user = vectors(rng, args.ads, k, args.latent_sigma)
    ad_site = vectors(rng, args.ads, k, args.latent_sigma)
    ad_device = vectors(rng, args.ads, k, args.latent_sigma)
    draw = {"user": power_law_sampler(rng, args.users, args.popularity),
            "site": power_law_sampler(rng, args.sites, args.popularity),
            "device": power_law_sampler(rng, args.devices, 0.5),
            "ad": power_law_sampler(rng, args.ads, args.popularity)}

    realized = 0.0
    expected = 0.0
    clicks = 0
    with open(args.out, "w") as out, open(args.truth, "w") as truth:
        for _ in range(args.examples):
            u, s, d, a = draw["user"](), draw["site"](), draw["device"](), draw["ad"]()
            logit = (args.bias + bias["user"][u] + bias["site"][s] + bias["device"][d]
                     + bias["ad"][a] + dot(user_v[u], ad_user[a]) + dot(site_v[s], ad_site[a])
                     + dot(device_v[d], ad_device[a]))
            p = 1.0 / (1.0 + math.exp(-logit))
            y = 1 if rng.random() < p else 0
            clicks += y
            realized -= math.log(p) if y else math.log(1.0 - p)
            expected -= p * math.log(p) + (1.0 - p) * math.log(1.0 - p)
            out.write(f"{1 if y else -1} |user u{u} |site s{s} |device d{d} |ad a{a}\n")
            truth.write(f"{p:.17g}\n")
    n = args.examples
    print(f"examples {n} ctr {clicks / n:.5f} bayes_logloss_realized {realized / n:.6f} "
          f"bayes_logloss_expected {expected / n:.6f}")


if __name__ == "__main__":
    main()
