"""Writes a word-level Hugging Face tokenizer to DIR: one token per whitespace-separated word, as
`tally bench fake-server` counts them, so that the peers' client-side token counts agree with the
server's. Usage: python make_tokenizer.py DIR"""

import json
import pathlib
import sys

from tokenizers import Tokenizer, decoders, models, pre_tokenizers

out = pathlib.Path(sys.argv[1])
out.mkdir(parents=True, exist_ok=True)
# The server's generated words (w0, w1, ...), tally's filler words, and plain English words that
# the peers' prompt corpora draw from; anything else is one [UNK] token, still one word.
words = ["[UNK]", "<s>", "</s>"] + [f"w{k}" for k in range(4096)]
words += (
    "the of and to a in is it you that he was for on are with as I his they be at one have this "
    "from or had by word but what some we can out other were all there when up use your how said "
    "an each she which do their time if will way about many then them write would like so these "
    "her long make thing see him two has look more day could go come did number sound no most "
    "people my over know water than call first who may down side been now find any new work part "
    "take get place made live where after back little only round man year came show every good "
    "me give our under name very through just form sentence great think say help low line differ "
    "turn cause much mean before move right boy old too same tell does set three want air well "
    "also play small end put home read hand port large spell add even land here must big high such"
).split()
vocab = {w: i for i, w in enumerate(dict.fromkeys(words))}
tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
tok.decoder = decoders.WordPiece(prefix="##", cleanup=False)  # joins words with one space
tok.save(str(out / "tokenizer.json"))
(out / "tokenizer_config.json").write_text(
    json.dumps(
        {
            "tokenizer_class": "PreTrainedTokenizerFast",
            "unk_token": "[UNK]",
            "bos_token": "<s>",
            "eos_token": "</s>",
            "model_max_length": 1_000_000,
            "chat_template": "{% for m in messages %}{{ m['content'] }} {% endfor %}",
        }
    )
)
(out / "config.json").write_text(json.dumps({"model_type": "llama"}))
enc = tok.encode("w1 w2 the  quick\tfox")
assert len(enc.ids) == 5, enc.ids
print(out)
