#!/usr/bin/env python3
"""Writes the seed corpus (fuzz/seeds/<target>/) from the interesting lengths:
empty, one byte, around the smallest budget, powers of two +- 1, with
multi-byte characters, CRLF and escape sequences at every offset near them.

Stage-like targets read 8 parameter bytes first (budget u16, select, lines,
percent, chunk u16, flags), then the input.
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))


def params(budget, select, lines, percent, chunk, flags):
    return struct.pack("<HBBBHB", budget, select, lines, percent, chunk, flags)


def write(target, name, data):
    d = os.path.join(HERE, "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def shapes(n):
    yield "lines", (b"abcdefghij\n" * (n // 11 + 1))[:n]
    yield "one-line", b"x" * n
    yield "crlf", (b"row\r\n" * (n // 5 + 1))[:n]
    for shift in range(4):
        yield f"emoji{shift}", (b"-" * shift + "\U0001F600".encode() * (n // 4 + 1))[:n]
    yield "ansi", (b"\x1b[31mred\x1b[0m \x1b]8;;u\x1b\\l\x1b]8;;\x1b\\\n" * (n // 30 + 1))[:n]
    yield "invalid", (b"ok \xff\xfe \xe2\x82 end\n" * (n // 16 + 1))[:n]


lengths = [0, 1, 3, 255, 256, 257, 600, 700, 1023, 1024, 1025, 4095, 4096, 4097]
for n in lengths:
    for shape, data in shapes(n):
        for select, flags in [(0, 0), (1, 1), (3, 2)]:
            p = params(n % 64, select, 3, 30, 7, flags)
            write("stage", f"{shape}-{n}-{select}", p + data)
            if select == 0:
                write("oracle", f"{shape}-{n}", p + data)
                write("run_code_render", f"{shape}-{n}", p + data)
write("content_id", "id", b"blake3:" + b"0123456789abcdef" * 4)
write("content_id", "prefix", b"0123abcd")
write("content_id", "range", b"10:20")
write("content_id", "size", b"1.5 MiB")
header = b'{"format":"spillway-session","version":1}\n'
event = b'{"type":"tool/result","callId":"c","content":[{"type":"text","text":"x"}],"isError":false}\n'
write("session_replay", "valid", event * 3)
write("session_replay", "torn", event + event[:30])
write("session_replay", "garbage", event + b"\xff\xfe not json\n" + event)
write("session_replay", "with-header", header + event)
# session_index: a mode byte (even: spillway's log, odd: DeepSeek Harness's;
# the rest: the indexing step), then the log's lines after its header.
call = b'{"type":"tool/call","callId":"c","tool":"run_code","args":{"code":"1"}}\n'
start = b'{"type":"tool/code-dispatch-start","subCallId":"c:code:1","parentCallId":"c","tool":"run","args":{}}\n'
settle = b'{"type":"tool/code-dispatch","subCallId":"c:code:1","parentCallId":"c","tool":"run","args":{},"content":[{"type":"text","text":"[spillway: omitted lines 2-9. read it with: spillway show blake3:0123456789abcdef --lines 2:9]"}],"isError":false}\n'
turn = b'{"type":"tool/turn","turnId":"t","budget":9,"calls":[{"callId":"c","demand":9,"share":4}]}\n'
write("session_index", "spillway", b"\x00" + call + start + settle + turn + event + b"torn")
write("session_index", "spillway-steps", b"\x06" + call + b"not json\n" + event)
dsh_call = b'{"type":"tool/call","seq":1,"time":1,"data":{"callId":"c","name":"run_code","arguments":"{\\"code\\":\\"1\\",\\"description\\":\\"d\\"}"}}\n'
dsh_settle = b'{"type":"tool/code-dispatch","seq":2,"time":1,"data":{"parentCallId":"c","subCallId":"c:code:1","name":"x","arguments":{},"isError":false,"content":[{"type":"text","text":"a"}]}}\n'
dsh_result = b'{"type":"tool/result","seq":3,"time":1,"data":{"message":{"content":[{"type":"tool-result","toolCallId":"c","content":[{"type":"text","text":"ok"}]}]}}}\n'
write("session_index", "deepseek", b"\x01" + dsh_call + dsh_settle + dsh_result)
for n in (0, 1, 100, 5000):
    write("store_read", f"len-{n}", bytes([n % 2, n % 6]) + struct.pack("<I", n) + b"x" * n)
