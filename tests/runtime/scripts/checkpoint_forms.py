"""Every map_location form, as a GPU script writes them: `checkpoint_forms.py CKPT SCRIPTED HUB_DIR`.

Not run as it is (it needs CUDA): the tests convert it and run the result on the simulated NPU,
once with a checkpoint saved on cuda:0 and once with one saved on the NPU. It prints, per form,
the device the loaded tensor landed on and its sum, as JSON.
"""

# ruff: noqa: UP031, UP032 (the %- and format() forms GPU scripts use are what is converted)

import json
import sys

import torch
import torch.utils.model_zoo as model_zoo
from torch.hub import load_state_dict_from_url


def storage_to_gpu(storage, location):
    return storage.cuda(1)


def forms(path, rank, hub_dir):
    url = "file://" + path
    return {
        "string": lambda: torch.load(path, map_location="cuda:1"),
        "positional": lambda: torch.load(path, "cuda"),
        "device": lambda: torch.load(path, map_location=torch.device("cuda", rank)),
        "fstring": lambda: torch.load(path, map_location=f"cuda:{rank}"),
        "percent": lambda: torch.load(path, map_location="cuda:%d" % rank),
        "format": lambda: torch.load(path, map_location="cuda:{}".format(rank)),
        "dict": lambda: torch.load(path, map_location={"cuda:0": "cuda:%d" % rank}),
        "dict_percent_key": lambda: torch.load(path, map_location={"cuda:%d" % 0: f"cuda:{rank}"}),
        "dict_to_cpu": lambda: torch.load(path, map_location={"cuda:0": "cpu"}),
        "lambda": lambda: torch.load(path, map_location=lambda storage, loc: storage.cuda(rank)),
        "function": lambda: torch.load(path, map_location=storage_to_gpu),
        "hub": lambda: load_state_dict_from_url(url, hub_dir, {"cuda:0": "cuda:1"}, progress=False),
        "model_zoo": lambda: model_zoo.load_url(url, hub_dir, map_location="cuda:1", progress=False),
    }


def main():
    path, scripted, hub_dir = sys.argv[1:4]
    results = {}
    for name, load in forms(path, 1, hub_dir).items():
        weight = load()["weight"]
        results[name] = [str(weight.device), weight.sum().item()]
    module = torch.jit.load(scripted, map_location="cuda:1")
    weight = module.weight
    results["jit"] = [str(weight.device), weight.sum().item()]
    print(json.dumps(results))


if __name__ == "__main__":
    main()
