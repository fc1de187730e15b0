"""spillway against a real S3 server (moto_server), checked with boto3."""

import concurrent.futures
import hashlib
import json
import os
import random
import subprocess
import time
import urllib.parse
from pathlib import Path

import pytest

from conftest import BIN, Proxy, spill_env

PREFIX = "team/spill"


def store_url(bucket: str) -> str:
    return f"s3://{bucket}/{PREFIX}"


def spillway(args, env, data: bytes | None = None, check=True) -> subprocess.CompletedProcess:
    p = subprocess.run(
        [BIN, *args], input=data, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300
    )
    if check and p.returncode != 0:
        raise AssertionError(f"spillway {args} exited {p.returncode}: {p.stderr.decode()}")
    return p


def apply(bucket, env, data: bytes, *flags) -> dict:
    p = spillway(
        ["--store", store_url(bucket), "apply", "--json", "--max-inline-bytes", "2KiB", *flags],
        env,
        data,
    )
    return json.loads(p.stdout)


def keys(s3, bucket, under: str) -> dict[str, int]:
    out = {}
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{PREFIX}/v1/{under}"):
        for o in page.get("Contents", []):
            out[o["Key"]] = o["Size"]
    return out




def object_key(outcome: dict) -> str:
    path = outcome["spill"]["path"]
    assert path.startswith("s3://")
    return path.split("/", 3)[3]


def log_lines(n: int, seed: int) -> bytes:
    rng = random.Random(seed)
    words = ["build", "compile", "link", "test", "warning", "ok", "crate", "module", "ms"]
    return b"".join(
        f"{i:07d} {' '.join(rng.choice(words) for _ in range(8))} {rng.random():.6f}\n".encode()
        for i in range(n)
    )


CASES = [
    # name, bytes, --compress
    ("raw-small", log_lines(3_000, 1), "none"),
    ("zstd-small", log_lines(3_000, 2), "zstd"),
    # over 8 MiB: two zstd frames, and more than one upload part
    ("raw-multipart", os.urandom(12 << 20), "none"),
    ("zstd-multiframe", log_lines(400_000, 3), "zstd"),
]


@pytest.mark.parametrize("name,data,compress", CASES, ids=[c[0] for c in CASES])
def test_round_trip_matches_the_local_store_byte_for_byte(tmp_path, moto, s3, bucket, name, data, compress):
    env = spill_env(moto.endpoint, tmp_path / "cache")
    out = apply(bucket, env, data, "--compress", compress, "--max-spill-bytes", "64MiB")
    spill = out["spill"]
    assert spill["bytes"] == len(data) and not spill["dedup"]
    key = object_key(out)
    assert key.startswith(f"{PREFIX}/v1/objects/{spill['id'][7:9]}/{spill['id'][9:]}")
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    assert len(body) == spill["stored_bytes"]
    if spill["compression"] == "none":
        assert body == data
    else:
        assert key.endswith(".zst") and body[-16:-8] == b"spillwy1"
    # The same content in a local store: the same file, byte for byte.
    local = tmp_path / "local"
    lenv = dict(env)
    lout = json.loads(
        spillway(["--store", str(local), "apply", "--json", "--max-inline-bytes", "2KiB", "--compress", compress], lenv, data).stdout
    )
    assert lout["spill"]["id"] == spill["id"]
    assert Path(lout["spill"]["path"]).read_bytes() == body
    # Read back through spillway: whole, a line range, a byte range.
    whole = spillway(["--store", store_url(bucket), "show", spill["id"]], env).stdout
    assert whole == data
    part = spillway(["--store", store_url(bucket), "show", spill["id"], "--bytes", "100:200"], env).stdout
    assert part == data[100:200]
    # Nothing left behind: no temporary key, no upload in progress.
    assert keys(s3, bucket, "tmp/") == {}
    assert not s3.list_multipart_uploads(Bucket=bucket).get("Uploads")


def test_a_bucket_copied_to_a_directory_verifies_there(tmp_path, moto, s3, bucket):
    env = spill_env(moto.endpoint, tmp_path / "cache")
    ids = {apply(bucket, env, log_lines(2_000, s), "--compress", c)["spill"]["id"] for s, c in ((5, "zstd"), (6, "none"))}
    local = tmp_path / "copied"
    for key in keys(s3, bucket, "objects/"):
        dest = local / key[len(PREFIX) + 1 :]
        dest.parent.mkdir(parents=True, exist_ok=True)
        dest.write_bytes(s3.get_object(Bucket=bucket, Key=key)["Body"].read())
    for d in [local, *local.rglob("*")]:
        d.chmod(0o700 if d.is_dir() else 0o600)
    report = json.loads(spillway(["--store", str(local), "verify", "--json"], env).stdout)
    assert report["ok"] == 2 and report["corrupt"] == []
    listed = {o["id"] for o in json.loads(spillway(["--store", str(local), "ls", "--json"], env).stdout)}
    assert listed == ids


def test_dedup_across_two_machines(tmp_path, moto, s3, bucket):
    data = log_lines(5_000, 7)
    a = spill_env(moto.endpoint, tmp_path / "cache-a")
    b = spill_env(moto.endpoint, tmp_path / "cache-b")
    first = apply(bucket, a, data)
    key = object_key(first)
    before = s3.head_object(Bucket=bucket, Key=key)
    second = apply(bucket, b, data)
    assert not first["spill"]["dedup"] and second["spill"]["dedup"]
    assert second["spill"]["id"] == first["spill"]["id"]
    after = s3.head_object(Bucket=bucket, Key=key)
    # Not written again; its use recorded where gc reads it.
    assert after["ETag"] == before["ETag"] and after["LastModified"] == before["LastModified"]
    hexid = first["spill"]["id"][7:]
    assert f"{PREFIX}/v1/used/{hexid[:2]}/{hexid[2:]}" in keys(s3, bucket, "used/")
    assert len(keys(s3, bucket, "objects/")) == 1
    assert spillway(["--store", store_url(bucket), "show", first["spill"]["id"]], b).stdout == data


def test_sixteen_processes_at_once(tmp_path, moto, s3, bucket):
    same = log_lines(20_000, 11)
    inputs = [same] * 8 + [log_lines(20_000, 100 + i) for i in range(8)]

    def one(i):
        env = spill_env(moto.endpoint, tmp_path / f"cache-{i}")
        return apply(bucket, env, inputs[i])

    with concurrent.futures.ThreadPoolExecutor(16) as pool:
        outs = list(pool.map(one, range(16)))
    assert [o["store_error"] for o in outs] == [None] * 16, [o["store_error"] for o in outs if o["store_error"]]
    ids = [o["spill"]["id"] for o in outs]
    assert len(set(ids[:8])) == 1 and len(set(ids)) == 9
    objects = keys(s3, bucket, "objects/")
    assert len(objects) == 9, objects
    env = spill_env(moto.endpoint, tmp_path / "reader")
    for data, out in zip(inputs, outs):
        got = spillway(["--store", store_url(bucket), "show", out["spill"]["id"]], env).stdout
        assert got == data
    # Exactly one writer of the same content wrote it; the rest found it.
    assert sum(not o["spill"]["dedup"] for o in outs[:8]) >= 1
    assert keys(s3, bucket, "tmp/") == {}


def test_server_gone_in_the_middle_of_a_64_mib_upload(tmp_path, moto, s3, bucket):
    proxy = Proxy(moto.port)
    proxy.start()
    env = spill_env(proxy.endpoint, tmp_path / "cache")
    data = os.urandom(48 << 20).hex().encode()[: 64 << 20]
    p = subprocess.Popen(
        [BIN, "--store", store_url(bucket), "apply", "--json", "--max-inline-bytes", "4KiB"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert p.stdin is not None
    p.stdin.write(data[: 40 << 20])
    p.stdin.flush()
    # Wait until parts are on their way, then take the server away.
    deadline = time.time() + 60
    while time.time() < deadline and not s3.list_multipart_uploads(Bucket=bucket).get("Uploads"):
        time.sleep(0.05)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads"), "the upload never started"
    proxy.stop()
    try:
        p.stdin.write(data[40 << 20 :])
        p.stdin.close()
    except BrokenPipeError:
        pass
    p.stdin = None
    out, err = p.communicate(timeout=180)
    assert p.returncode == 0, err
    outcome = json.loads(out)
    assert outcome["spill"] is None
    assert outcome["store_error_kind"] in ("other_io", "permission_denied")
    content = outcome["content"]
    assert len(content.encode()) <= 4096
    assert "could not be saved" in content
    assert content.startswith(data[:100].decode())
    # Nothing under any object's name.
    assert keys(s3, bucket, "objects/") == {}
    # The server is back: the retry stores it, and cleanup aborts the
    # abandoned upload (once it is older than the grace period).
    proxy2 = Proxy(moto.port)
    proxy2.start()
    env = spill_env(proxy2.endpoint, tmp_path / "cache")
    again = apply(bucket, env, data)
    assert again["spill"]["bytes"] == len(data) and not again["spill"]["dedup"]
    assert len(keys(s3, bucket, "objects/")) == 1
    assert spillway(["--store", store_url(bucket), "show", again["spill"]["id"], "--lines", "1:1"], env).stdout == data
    left = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    spillway(["--store", store_url(bucket), "verify", "--grace", "0s"], env)
    still = s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])
    assert still == [], f"{len(left)} abandoned uploads before verify, {len(still)} after"
    proxy2.stop()


def test_a_corrupt_object_is_refused_and_quarantined(tmp_path, moto, s3, bucket):
    env = spill_env(moto.endpoint, tmp_path / "cache")
    good = apply(bucket, env, log_lines(4_000, 21), "--compress", "none")
    data = log_lines(4_000, 22)
    planted = apply(bucket, spill_env(moto.endpoint, tmp_path / "c2"), data, "--compress", "none")
    key = object_key(planted)
    # Someone else's bytes under its name.
    s3.put_object(Bucket=bucket, Key=key, Body=data[:-1] + b"X")
    reader = spill_env(moto.endpoint, tmp_path / "fresh-cache")
    p = spillway(["--store", store_url(bucket), "show", planted["spill"]["id"]], reader, check=False)
    assert p.returncode != 0 and p.stdout == b""
    assert b"corrupt" in p.stderr and b"do not hash" in p.stderr
    # The read set it aside at once: verify finds nothing left to move.
    assert key not in keys(s3, bucket, "objects/")
    v = spillway(["--store", store_url(bucket), "verify", "--json"], reader, check=False)
    assert v.returncode == 0, v.stderr
    report = json.loads(v.stdout)
    assert report["ok"] == 1 and report["corrupt"] == []
    assert object_key(good) in keys(s3, bucket, "objects/")
    quarantined = keys(s3, bucket, "quarantine/")
    assert len(quarantined) == 1
    assert s3.get_object(Bucket=bucket, Key=next(iter(quarantined)))["Body"].read() == data[:-1] + b"X"


def test_gc_with_a_concurrent_writer_on_another_machine(tmp_path, moto, s3, bucket):
    writer = spill_env(moto.endpoint, tmp_path / "writer-cache")
    collector = spill_env(moto.endpoint, tmp_path / "gc-cache")
    hot = log_lines(3_000, 31)
    stop = time.time() + 25
    gc_reports = []

    def collect():
        while time.time() < stop:
            p = spillway(["--store", store_url(bucket), "gc", "--max-age", "2s", "--json", "-q"], collector)
            gc_reports.append(json.loads(p.stdout))

    misses = []
    writes = 0
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        gc_job = pool.submit(collect)
        i = 0
        while time.time() < stop - 1:
            # The hot object: a dedup hit most of the time.
            out = apply(bucket, writer, hot)
            if s3.list_objects_v2(Bucket=bucket, Prefix=object_key(out)).get("KeyCount", 0) != 1:
                misses.append(out["spill"])
            # A cold one each round, which gc should take once it is 2 s old.
            apply(bucket, writer, log_lines(500, 1000 + i))
            i += 1
            writes += 1
        gc_job.result()
    assert writes >= 5 and len(gc_reports) >= 3
    assert misses == [], f"{len(misses)} writes reported an object gc had removed"
    removed = sum(len(r["removed"]) for r in gc_reports)
    assert removed >= 1, "gc removed nothing: the test did not exercise it"
    final = apply(bucket, writer, hot)
    got = spillway(["--store", store_url(bucket), "show", final["spill"]["id"]], spill_env(moto.endpoint, tmp_path / "r")).stdout
    assert got == hot


def test_ls_stats_and_gc_by_quota(tmp_path, moto, s3, bucket):
    env = spill_env(moto.endpoint, tmp_path / "cache")
    outs = [apply(bucket, env, log_lines(3_000, 40 + i)) for i in range(3)]
    listed = json.loads(spillway(["--store", store_url(bucket), "ls", "--json"], env).stdout)
    assert sorted(o["id"] for o in listed) == sorted(o["spill"]["id"] for o in outs)
    for o in listed:
        match = next(x for x in outs if x["spill"]["id"] == o["id"])
        assert o["bytes"] == match["spill"]["bytes"] and o["stored_bytes"] == match["spill"]["stored_bytes"]
    stats = json.loads(spillway(["--store", store_url(bucket), "stats", "--json"], env).stdout)
    assert stats["objects"] == 3 and stats["bytes"] == sum(o["spill"]["bytes"] for o in outs)
    # A session log that references the first keeps it.
    log = tmp_path / "session.jsonl"
    log.write_text(json.dumps({"text": f"see {outs[0]['spill']['id']}"}) + "\n")
    gc = json.loads(
        spillway(["--store", store_url(bucket), "gc", "--max-bytes", "0", "--keep-referenced-by", str(log), "--json"], env).stdout
    )
    assert gc["kept_referenced"] == 1 and len(gc["removed"]) == 2
    assert list(keys(s3, bucket, "objects/")) == [object_key(outs[0])]


def test_errors_name_what_is_missing(tmp_path, moto, bucket):
    env = spill_env(moto.endpoint, tmp_path / "cache")
    del env["AWS_SECRET_ACCESS_KEY"]
    p = spillway(["--store", store_url(bucket), "ls"], env, check=False)
    assert p.returncode != 0 and b"AWS_SECRET_ACCESS_KEY" in p.stderr
    env = spill_env("http://192.0.2.1:9000", tmp_path / "cache")
    p = spillway(["--store", store_url(bucket), "ls"], env, check=False)
    assert p.returncode != 0 and b"AWS_ALLOW_HTTP" in p.stderr
    p = spillway(["--store", "s3://No_Such/x", "ls"], spill_env(moto.endpoint, tmp_path / "c"), check=False)
    assert p.returncode != 0 and b"bucket name" in p.stderr
    # A bucket that does not exist: a clear error, not an empty listing.
    p = spillway(["--store", "s3://no-such-bucket-here/x", "ls"], spill_env(moto.endpoint, tmp_path / "c"), check=False)
    assert p.returncode != 0 and b"no-such-bucket-here" in p.stderr
    # Reading from it, or writing to it, says the bucket is missing, not the object.
    missing = "s3://no-such-bucket-here/x"
    p = spillway(["--store", missing, "show", "blake3:" + "ab" * 32], spill_env(moto.endpoint, tmp_path / "c"), check=False)
    assert p.returncode != 0 and b"NoSuchBucket" in p.stderr, p.stderr
    p = spillway(
        ["--store", missing, "apply", "--json", "--max-inline-bytes", "1KiB"],
        spill_env(moto.endpoint, tmp_path / "c"),
        b"x\n" * 5000,
        check=False,
    )
    out = json.loads(p.stdout)
    assert "NoSuchBucket" in out["store_error"], out["store_error"]
    assert out["store_error_kind"] == "not_found"


def test_the_store_url_from_the_config_file_and_the_environment(tmp_path, moto, s3, bucket):
    env = spill_env(moto.endpoint, tmp_path / "cache")
    data = log_lines(3_000, 61)
    config = tmp_path / "config.toml"
    config.write_text(f'store = "{store_url(bucket)}"\n')
    p = spillway(["--config", str(config), "apply", "--json", "--max-inline-bytes", "2KiB"], env, data)
    out = json.loads(p.stdout)
    assert object_key(out) in keys(s3, bucket, "objects/")
    env["SPILLWAY_STORE"] = store_url(bucket)
    listed = json.loads(spillway(["ls", "--json"], env).stdout)
    assert [o["id"] for o in listed] == [out["spill"]["id"]]
    assert f"--store {store_url(bucket)} show" in spillway(["apply", "--max-inline-bytes", "2KiB"], env, data).stdout.decode()


@pytest.mark.parametrize("damage", ["same-size", "truncated"])
def test_a_damaged_object_is_repaired_by_the_next_writer(tmp_path, moto, s3, bucket, damage):
    # A writer that finds its output already stored, but damaged, never says
    # "stored" for bytes nobody can read back: it puts its own good bytes in
    # place (the damaged copy quarantined).
    data = log_lines(4_000, 31)
    first = apply(bucket, spill_env(moto.endpoint, tmp_path / "c1"), data, "--compress", "none")
    key = object_key(first)
    bad = data[:-1] + b"X" if damage == "same-size" else data[: len(data) // 2]
    s3.put_object(Bucket=bucket, Key=key, Body=bad)
    assert_repaired(
        tmp_path, moto, s3, bucket, first, key, data, bad,
        lambda cache: apply(bucket, spill_env(moto.endpoint, tmp_path / cache), data, "--compress", "none"),
    )


def assert_repaired(tmp_path, moto, s3, bucket, first, key, data, bad, write):
    """The next `write` (given a fresh cache's name) of `data`, whose object
    at `key` was damaged into `bad`, puts good bytes in its place, the damaged
    ones quarantined; a write after that is a hit."""
    again = write("c2")
    assert again["store_error"] is None, again["store_error"]
    assert again["spill"]["id"] == first["spill"]["id"] and not again["spill"]["dedup"], again["spill"]
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
    reader = spill_env(moto.endpoint, tmp_path / "fresh")
    shown = spillway(["--store", store_url(bucket), "show", first["spill"]["id"]], reader)
    assert shown.stdout == data
    quarantined = keys(s3, bucket, "quarantine/")
    assert [s3.get_object(Bucket=bucket, Key=k)["Body"].read() for k in quarantined] == [bad]
    # A good object is still a dedup hit.
    third = write("c3")
    assert third["spill"]["dedup"] and third["store_error"] is None


@pytest.mark.parametrize("damage", ["same-size", "garbage-at-the-zst-key"])
def test_a_whole_file_never_reports_a_damaged_object_as_stored(tmp_path, moto, s3, bucket, damage):
    # The whole-input path (a file of a megabyte or more, mapped) checks an
    # object it finds against the content before it calls it a hit, as a
    # streamed write does: a damaged one is set aside and the content put
    # in its place, in every input mode.
    data = random.Random(42).randbytes(3 << 20)
    path = tmp_path / "in.bin"
    path.write_bytes(data)
    first = apply_file(bucket, spill_env(moto.endpoint, tmp_path / "c1"), path, "--compress", "none")
    key = object_key(first)
    if damage == "same-size":
        bad_key, bad = key, data[:100] + bytes([data[100] ^ 1]) + data[101:]
        s3.put_object(Bucket=bucket, Key=key, Body=bad)
    else:
        # Nothing under the raw key; 72 bytes of garbage under the zstd one.
        s3.delete_object(Bucket=bucket, Key=key)
        bad_key, bad = key + ".zst", random.Random(7).randbytes(72)
        s3.put_object(Bucket=bucket, Key=bad_key, Body=bad)
    assert_repaired(
        tmp_path, moto, s3, bucket, first, key, data, bad,
        lambda cache: apply_file(bucket, spill_env(moto.endpoint, tmp_path / cache), path, "--compress", "none"),
    )
    assert bad_key not in keys(s3, bucket, "objects/") or bad_key == key


def test_the_store_works_inside_async_code(tmp_path, moto, s3, bucket):
    # An async harness opens the store, writes and drops it from inside a
    # task, on a multi-threaded runtime and on a current-thread one: no
    # "runtime within a runtime" panic, and the output is stored.
    example = Path(BIN).parent / "examples" / "in_async"
    data = log_lines(3_000, 41)
    p = subprocess.run(
        [str(example), store_url(bucket), "2048"],
        input=data,
        env=spill_env(moto.endpoint, tmp_path / "c"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        timeout=300,
    )
    assert p.returncode == 0, p.stderr.decode()
    outcomes = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(outcomes) == 2
    for o in outcomes:
        assert o["store_error"] is None, o["store_error"]
        assert len(o["content"].encode()) <= 2048
    assert outcomes[0]["spill"]["id"] == outcomes[1]["spill"]["id"]
    assert outcomes[1]["spill"]["dedup"]
    shown = spillway(["--store", store_url(bucket), "show", outcomes[0]["spill"]["id"]], spill_env(moto.endpoint, tmp_path / "r"))
    assert shown.stdout == data


def test_an_abandoned_copy_at_an_object_key_is_aborted_and_a_live_one_is_not(tmp_path, moto, s3, bucket):
    # A writer that dies during the create-only copy leaves a multipart
    # upload at the object's key, which carries no time. Cleanup aborts it
    # unless a live writer's copy marker (younger than the grace) names it.
    env = spill_env(moto.endpoint, tmp_path / "cache")
    dead = f"{PREFIX}/v1/objects/ab/" + "c" * 62 + ".zst"
    live = f"{PREFIX}/v1/objects/cd/" + "e" * 62
    for key in (dead, live):
        up = s3.create_multipart_upload(Bucket=bucket, Key=key)
        s3.upload_part(Bucket=bucket, Key=key, UploadId=up["UploadId"], PartNumber=1, Body=b"x" * 1024)
    marker = f"{PREFIX}/v1/tmp/{time.time_ns()}-1-0.copying"
    s3.put_object(Bucket=bucket, Key=marker, Body=live.encode())

    def uploads():
        return sorted(u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []))

    assert uploads() == sorted([dead, live])
    spillway(["--store", store_url(bucket), "gc", "--grace", "1h"], env)
    assert uploads() == [live]
    # The marker outlives the grace: its writer is gone too.
    spillway(["--store", store_url(bucket), "verify", "--grace", "0s"], env)
    assert uploads() == []
    # A real publish leaves neither an upload nor a marker behind.
    data = os.urandom(9 << 20)
    out = apply(bucket, env, data, "--compress", "none")
    assert out["store_error"] is None and out["spill"]["bytes"] == len(data)
    assert uploads() == []
    assert [k for k in keys(s3, bucket, "tmp/") if k.endswith(".copying")] == []


class CompletionGate(Proxy):
    """A proxy that runs `before(key)` when a request to complete a
    multipart upload passes, before the server sees it: another writer's
    object lands at the key between spillway's look and its completion."""

    def __init__(self, target_port: int, before) -> None:
        super().__init__(target_port)
        self.before = before
        self.completions: list[str] = []

    def sent(self, data: bytes) -> None:
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        if line.startswith("POST ") and "uploadId=" in line:
            path = line.split(" ")[1].split("?")[0]
            key = urllib.parse.unquote(path.split("/", 2)[2])
            self.completions.append(key)
            self.before(key)


def apply_file(bucket, env, path: Path, *flags) -> dict:
    """`apply` with stdin redirected from a file: the whole input at hand."""
    with open(path, "rb") as stdin:
        p = subprocess.run(
            [BIN, "--store", store_url(bucket), "apply", "--json", "--max-inline-bytes", "2KiB", *flags],
            stdin=stdin,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            timeout=300,
        )
    assert p.returncode == 0, p.stderr.decode()
    return json.loads(p.stdout)


def test_a_whole_file_goes_straight_to_its_key_in_parts(tmp_path, moto, s3, bucket):
    # Past one part but up to 32 MiB: one create-only PUT. Just past 32 MiB,
    # and more: parts at the key. Either way no temporary key, no upload
    # left, the object's bytes are the file's, and the next writer finds it.
    env = spill_env(moto.endpoint, tmp_path / "cache")
    for size in ((8 << 20) + 4096, (32 << 20) + 4096, 45 << 20):
        data = os.urandom(size)
        f = tmp_path / f"in-{size}"
        f.write_bytes(data)
        gate = CompletionGate(moto.port, lambda key: None)
        gate.start()
        out = apply_file(bucket, spill_env(gate.endpoint, tmp_path / "cache"), f, "--compress", "none")
        gate.stop()
        assert out["store_error"] is None and not out["spill"]["dedup"]
        key = object_key(out)
        if size > 32 << 20:
            assert gate.completions == [key], "completed at the object's key, once"
        else:
            assert gate.completions == [], "sent in one PUT"
        assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
        assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
        assert keys(s3, bucket, "tmp/") == {}
        again = apply_file(bucket, env, f, "--compress", "none")
        assert again["spill"]["dedup"] and again["spill"]["id"] == out["spill"]["id"]


@pytest.mark.parametrize("planted", ["the same bytes", "other bytes"])
def test_an_object_that_lands_before_the_completion_is_never_replaced(tmp_path, moto, s3, bucket, planted):
    # The completion carries If-None-Match: *. When another writer's object
    # arrives between the look and the completion, the server refuses to
    # replace it: a good one is a dedup hit, a bad one is set aside and the
    # content stored after all.
    data = os.urandom(36 << 20)
    f = tmp_path / "in"
    f.write_bytes(data)
    body = data if planted == "the same bytes" else data[:-1] + b"X"
    landed = []

    def land(key):
        if not landed:
            s3.put_object(Bucket=bucket, Key=key, Body=body)
            landed.append(key)

    gate = CompletionGate(moto.port, land)
    gate.start()
    out = apply_file(bucket, spill_env(gate.endpoint, tmp_path / "cache"), f, "--compress", "none")
    gate.stop()
    assert out["store_error"] is None
    key = object_key(out)
    assert landed == [key]
    assert s3.get_object(Bucket=bucket, Key=key)["Body"].read() == data
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    if planted == "the same bytes":
        assert out["spill"]["dedup"] and len(gate.completions) == 1
        assert keys(s3, bucket, "quarantine/") == {}
    else:
        assert not out["spill"]["dedup"] and len(gate.completions) == 2
        quarantined = keys(s3, bucket, "quarantine/")
        assert len(quarantined) == 1
        assert s3.get_object(Bucket=bucket, Key=next(iter(quarantined)))["Body"].read() == body
    assert keys(s3, bucket, "tmp/") == {}


def test_a_writer_killed_while_sending_parts_to_the_key_leaves_nothing_under_it(tmp_path, moto, s3, bucket):
    # The crash case of the straight path: the upload sits at the object's
    # key, so only its marker says a writer was alive. Nothing is under the
    # key; cleanup spares the upload while the marker is young and aborts
    # it after; the next writer stores the content.
    env = spill_env(moto.endpoint, tmp_path / "cache")
    data = os.urandom(64 << 20)
    f = tmp_path / "in"
    f.write_bytes(data)
    with open(f, "rb") as stdin:
        p = subprocess.Popen(
            [BIN, "--store", store_url(bucket), "apply", "--json", "--compress", "none"],
            stdin=stdin,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        deadline = time.time() + 60
        while time.time() < deadline and not s3.list_multipart_uploads(Bucket=bucket).get("Uploads"):
            time.sleep(0.01)
        p.kill()
        p.wait(30)
    uploads = [u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])]
    assert len(uploads) == 1 and "/v1/objects/" in uploads[0], uploads
    assert keys(s3, bucket, "objects/") == {}
    markers = [k for k in keys(s3, bucket, "tmp/") if k.endswith(".copying")]
    assert len(markers) == 1
    assert s3.get_object(Bucket=bucket, Key=markers[0])["Body"].read().decode() == uploads[0]
    spillway(["--store", store_url(bucket), "gc", "--grace", "1h"], env)
    assert [u["Key"] for u in s3.list_multipart_uploads(Bucket=bucket).get("Uploads", [])] == uploads
    spillway(["--store", store_url(bucket), "verify", "--grace", "0s"], env)
    assert s3.list_multipart_uploads(Bucket=bucket).get("Uploads", []) == []
    out = apply_file(bucket, env, f, "--compress", "none")
    assert out["store_error"] is None and not out["spill"]["dedup"]
    assert object_key(out) == uploads[0]
    assert s3.get_object(Bucket=bucket, Key=uploads[0])["Body"].read() == data
