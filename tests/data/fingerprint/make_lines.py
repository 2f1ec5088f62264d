"""Writes lines.jsonl: JSONL lines that the fingerprint's line copy (tunegate/native/canonical.c) must
either copy to exactly the canonical line of the record they parse to, or leave to orjson.

    python tests/data/fingerprint/make_lines.py
"""
from pathlib import Path

LINES = [
    rb'{"messages":[{"role":"user","content":"Hi"},{"role":"assistant","content":"Hello!"}]}',  # copied, keys swapped
    rb'{"messages":[{"content":"already sorted","role":"user"},{"content":"ok","role":"assistant"}]}',
    rb' { "messages" : [ { "role" : "user" , "content" : "spaced out" } ,{"role":"assistant","content":"x"}] } ',
    '{"messages":[{"role":"user","content":"é 中文 👋 \u2028 \x7f end"},{"role":"assistant","content":"ü"}]}'.encode(),
    rb'{"messages":[{"role":"user","content":"q \" \\ \n \t \b \f \r \u0000 \u001f \u000b"},{"role":"assistant","content":""}]}',
    rb'{"messages":[]}',
    rb'{"messages":[{"role":"user","content":"crlf"},{"role":"assistant","content":"a"}]}' + b"\r",
    rb'{"messages":[{"role":"user","content":"ascii escape \u00e9"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"pair \ud83d\ude00"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"a\/b"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"upper \u001F"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"long form \u000a"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"n"},{"role":"assistant","content":"a"}],"n":123456789012345678901234567890}',
    rb'{"id":1,"messages":[{"role":"user","content":"key before"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":[{"type":"text","text":"parts"}]},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":null},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"three","name":"x"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","role":"system","content":"twice"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"m"}],"messages":[{"role":"user","content":"second"}]}',
    rb'{"messages":[{"\u0072ole":"user","content":"escaped key"},{"role":"assistant","content":"a"}]}',
    rb'{"messages":[{"role":"user","content":"nested"},{"role":"assistant","content":"a","weight":[[1,[2.5]]]}]}',
    rb'{"messages":[{"role":"user","content":"float"},{"role":"assistant","content":"a"}],"w":1.5e300}',
    rb'{"conversations":[{"from":"human","value":"sharegpt"},{"from":"gpt","value":"a"}]}',
    rb'{"messages":[{"role":"user","content":"' + b"long " * 40 + "ü".encode() + b"x" * 33 + rb'"},{"role":"assistant","content":"a"}]}',
]

if __name__ == "__main__":
    (Path(__file__).parent / "lines.jsonl").write_bytes(b"".join(line + b"\n" for line in LINES))
