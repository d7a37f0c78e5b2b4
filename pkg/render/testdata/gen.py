#!/usr/bin/env python3
"""Writes the golden and bad-input case folders under testdata/.

Each case folder is a self-contained directory of manifests (pools, MCs,
payload ConfigMap) usable as `kiln-steps render --source dir:<case>`; the
expected output lives next to it (rendered.golden, results.golden or
error.txt). {{URL}} stands for the httptest server the tests start.
Run from pkg/render: python3 testdata/gen.py, then go test -run Golden -update.
"""
import base64, gzip, json, os, shutil, yaml

def _str(dumper, v):
    if "\n" in v:
        return dumper.represent_scalar("tag:yaml.org,2002:str", v, style="|")
    return dumper.represent_scalar("tag:yaml.org,2002:str", v)
yaml.SafeDumper.add_representer(str, _str)
from urllib.parse import quote

ROOT = os.path.dirname(os.path.abspath(__file__))
BASE_IMG = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "1" * 64
EXT_IMG = "quay.io/openshift-release-dev/ocp-v4.0-art-dev@sha256:" + "2" * 64
ROLE = "machineconfiguration.openshift.io/role"

def payload(release="4.20.0", with_cm=True, cv_version=None, base=BASE_IMG):
    docs = []
    if with_cm:
        docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "machine-config-osimageurl", "namespace": "openshift-machine-config-operator", "resourceVersion": "11"},
                     "data": {"releaseVersion": release, "baseOSContainerImage": base,
                              "baseOSExtensionsContainerImage": EXT_IMG, "osImageURL": ""}})
    if cv_version:
        docs.append({"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
                     "spec": {"clusterID": "00000000-0000-0000-0000-000000000001"},
                     "status": {"desired": {"version": cv_version, "image": "quay.io/openshift-release-dev/ocp-release@sha256:" + "3" * 64},
                                "observedGeneration": 1, "versionHash": "x", "availableUpdates": None}})
    return docs

def pool(name, selector=None, node_labels=None, current=None):
    if selector is None:
        selector = {"matchLabels": {ROLE: name}}
    if node_labels is None:
        node_labels = {"node-role.kubernetes.io/" + name: ""}
    p = {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfigPool",
         "metadata": {"name": name, "resourceVersion": "7"},
         "spec": {"machineConfigSelector": selector, "nodeSelector": {"matchLabels": node_labels}}}
    if current:
        p["spec"]["configuration"] = {"name": current}
    return p

def custom_pool(name):
    return pool(name, selector={"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["worker", name]}]})

def mc(name, role="worker", config=None, labels=None, annotations=None, **spec):
    meta = {"name": name, "resourceVersion": "1"}
    if labels is None:
        labels = {ROLE: role}
    if labels:
        meta["labels"] = labels
    if annotations:
        meta["annotations"] = annotations
    s = dict(spec)
    if config is not None:
        s["config"] = config
    return {"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "metadata": meta, "spec": s}

def ign(version="3.5.0", **kw):
    c = {"ignition": {"version": version}}
    c.update(kw)
    return c

def data(text):
    return "data:," + quote(text, safe="")

def f3(path, text=None, mode=420, **kw):
    f = {"path": path, "mode": mode}
    if text is not None:
        f["contents"] = {"source": data(text)}
    f.update(kw)
    return f

def f2(path, text, mode=420):
    return {"filesystem": "root", "path": path, "mode": mode, "contents": {"source": data(text)}}

def unit(name, contents=None, enabled=None, dropins=None):
    u = {"name": name}
    if contents is not None:
        u["contents"] = contents
    if enabled is not None:
        u["enabled"] = enabled
    if dropins:
        u["dropins"] = dropins
    return u

GZ_HELLO = "data:;base64," + base64.b64encode(gzip.compress(b"hello world\n", mtime=0)).decode()
KEY_A = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa a@example"
KEY_B = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIBbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb b@example"
KEY_C = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAICcccccccccccccccccccccccccccccccccccccccccc c@example"
# rendered config a pool already runs (irreconcilable checks)
OLD = "rendered-worker-00000000000000000000000000000000"
def old_rendered(config, fips=False):
    m = mc(OLD, labels={}, config=config, fips=fips, kernelType="default", osImageURL=BASE_IMG, kernelArguments=[], extensions=[])
    m["metadata"]["annotations"] = {"machineconfiguration.openshift.io/release-image-version": "4.19.0"}
    return m

def base_worker():
    return [pool("worker"), pool("master"),
            mc("00-worker", config=ign(storage={"files": [f3("/etc/kubernetes/kubelet.conf", "kind: KubeletConfiguration\n")]},
                                      systemd={"units": [unit("kubelet.service", "[Unit]\nDescription=kubelet\n", enabled=True)]})),
            mc("00-master", role="master", config=ign(storage={"files": [f3("/etc/kubernetes/kubelet.conf", "master\n")]}))]

GOLDEN = {}
BAD = {}

GOLDEN["single-spec3"] = base_worker()
GOLDEN["kargs-only-no-config"] = base_worker() + [mc("05-kargs", kernelArguments=["nosmt"])]
GOLDEN["worker-first-order"] = [custom_pool("infra"), pool("worker"),
    mc("00-infra", role="infra", config=ign(storage={"files": [f3("/etc/role", "infra\n")]})),
    mc("99-worker", config=ign(storage={"files": [f3("/etc/role", "worker\n")]})), ], "infra"
GOLDEN["custom-pool-over-worker"] = [custom_pool("infra"), pool("worker")] + base_worker()[2:3] + [
    mc("50-infra-kubelet", role="infra", config=ign(storage={"files": [f3("/etc/kubernetes/kubelet.conf", "kind: KubeletConfiguration\nmaxPods: 500\n")]}), kernelArguments=["infra=1"]),
    mc("99-worker-ssh", config=ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A]}]}))], "infra"
GOLDEN["spec2-spec3-mix"] = base_worker() + [
    mc("10-spec2", config={"ignition": {"version": "2.2.0"}, "storage": {"files": [f2("/etc/spec2.conf", "from spec 2\n")]},
                           "systemd": {"units": [{"name": "spec2.service", "enabled": True, "contents": "[Unit]\nDescription=spec2\n"}]}}),
    mc("20-spec3", config=ign(storage={"files": [f3("/etc/spec3.conf", "from spec 3\n")]}))]
GOLDEN["spec2-duplicates"] = base_worker() + [
    mc("10-spec2-dups", config={"ignition": {"version": "2.2.0"},
        "storage": {"files": [f2("/etc/dup.conf", "first\n"), f2("/etc/dup.conf", "second wins\n", 384)]},
        "systemd": {"units": [{"name": "dup.service", "contents": "[Unit]\nDescription=first\n", "dropins": [{"name": "a.conf", "contents": "[Service]\nA=1\n"}]},
                              {"name": "dup.service", "contents": "[Unit]\nDescription=second\n", "dropins": [{"name": "b.conf", "contents": "[Service]\nB=1\n"}]}]}})]
GOLDEN["ssh-key-merge-spec3"] = base_worker() + [
    mc("99-worker-ssh", config=ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A, KEY_B]}]})),
    mc("99-worker-ssh-2", config=ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": [KEY_B, KEY_C]}]}))]
GOLDEN["ssh-key-merge-spec2"] = base_worker() + [
    mc("99-worker-ssh", config={"ignition": {"version": "2.2.0"}, "passwd": {"users": [
        {"name": "core", "sshAuthorizedKeys": [KEY_A]}, {"name": "core", "sshAuthorizedKeys": [KEY_B, KEY_A]}]}})]
GOLDEN["compressed-then-plain"] = base_worker() + [
    mc("10-gz", config=ign(storage={"files": [f3("/etc/hello", None, contents={"source": GZ_HELLO, "compression": "gzip"})]})),
    mc("20-plain", config=ign(storage={"files": [f3("/etc/hello", "plain now\n")]}))]
GOLDEN["plain-then-compressed"] = base_worker() + [
    mc("10-plain", config=ign(storage={"files": [f3("/etc/hello", "plain\n")]})),
    mc("20-gz", config=ign(storage={"files": [f3("/etc/hello", None, contents={"source": GZ_HELLO, "compression": "gzip"})]}))]
GOLDEN["overwrite-defaults"] = base_worker() + [
    mc("10-files", config=ign(storage={"files": [f3("/etc/no-overwrite", "x\n", overwrite=False), f3("/etc/default-overwrite", "y\n")]}))]
GOLDEN["kargs-concat-no-dedup"] = base_worker() + [
    mc("05-kargs-a", kernelArguments=["nosmt", "audit=1"]), mc("06-kargs-b", kernelArguments=["audit=1", "nosmt"])]
GOLDEN["fips-any-true"] = base_worker() + [mc("05-fips", fips=True), mc("06-no-fips", fips=False)]
GOLDEN["kerneltype-last-wins"] = base_worker() + [mc("05-rt", kernelType="realtime"), mc("06-64k", kernelType="64k-pages"), mc("07-default", kernelType="default")]
GOLDEN["kerneltype-realtime"] = base_worker() + [mc("05-rt", kernelType="realtime")]
GOLDEN["extensions-concat"] = base_worker() + [mc("05-ext", extensions=["usbguard", "kerberos"]), mc("06-ext", extensions=["sysstat", "usbguard"])]
GOLDEN["kernel-devel-default-kernel"] = base_worker() + [mc("05-ext", extensions=["kernel-devel"], kernelType="default")]
GOLDEN["osimageurl-override-wins"] = base_worker() + [
    mc("90-os-a", osImageURL="registry.example.com/os/custom:a"), mc("91-os-b", osImageURL="registry.example.com/os/custom@sha256:" + "4" * 64)]
GOLDEN["osimageurl-same-as-payload"] = base_worker() + [mc("90-os", osImageURL=BASE_IMG)]
GOLDEN["osimageurl-generated-mc-ignored"] = base_worker() + [
    mc("01-generated", osImageURL="registry.example.com/generated:ignored",
       annotations={"machineconfiguration.openshift.io/generated-by-controller-version": "abc123"})]
GOLDEN["extensions-image-override"] = base_worker() + [mc("90-ext-img", baseOSExtensionsContainerImage="registry.example.com/ext@sha256:" + "5" * 64)]
GOLDEN["managed-mc-excluded"] = base_worker() + [
    mc("99-kiln-worker-os-image", labels={ROLE: "worker", "kiln.dev/managed": "true"}, osImageURL="registry.example.com/kiln/worker@sha256:" + "6" * 64)]
GOLDEN["master-pool"] = base_worker(), "master"
GOLDEN["spec31-converted"] = base_worker() + [mc("10-v31", config=ign("3.1.0", storage={"files": [f3("/etc/v31", "three one\n")]}))]
GOLDEN["spec34-converted"] = base_worker() + [mc("10-v34", config=ign("3.4.0", storage={"files": [f3("/etc/v34", "three four\n")]}, kernelArguments={"shouldExist": ["a=b"]}))]
GOLDEN["units-dropins-merge"] = base_worker() + [
    mc("10-dropin", config=ign(systemd={"units": [unit("kubelet.service", dropins=[{"name": "10-env.conf", "contents": "[Service]\nEnvironment=A=1\n"}])]})),
    mc("20-mask", config=ign(systemd={"units": [unit("kubelet.service", enabled=False)]}))]
GOLDEN["selector-match-expressions"] = [pool("worker", selector={"matchExpressions": [{"key": ROLE, "operator": "In", "values": ["worker"]}]})] + base_worker()[2:]
GOLDEN["moduleday0-build-sign"] = base_worker() + [{"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleDay0",
    "metadata": {"name": "nvidia", "namespace": "openshift-kmm", "resourceVersion": "3"},
    "spec": {"machineConfigPoolSelector": {"node-role.kubernetes.io/worker": ""},
             "osMapping": {"containerImage": "registry.example.com/kmod/worker:1", "build": {"dockerfileConfigMap": {"name": "df"}},
                           "sign": {"certSecret": {"name": "c"}, "keySecret": {"name": "k"}, "filesToSign": ["/lib/modules/x.ko"]}}}}]
GOLDEN["moduleday0-other-pool"] = base_worker() + [{"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleDay0",
    "metadata": {"name": "nvidia", "namespace": "openshift-kmm"},
    "spec": {"machineConfigPoolSelector": {"node-role.kubernetes.io/gpu": ""}, "osMapping": {"containerImage": "registry.example.com/kmod/gpu:1"}}}]
GOLDEN["reconcilable-ssh-change"] = [pool("worker", current=OLD)] + base_worker()[1:] + [
    old_rendered(ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A]}]})),
    mc("99-worker-ssh", config=ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": [KEY_B]}]}))]
GOLDEN["release-from-clusterversion"] = (base_worker()[:2] + base_worker()[2:], "worker", payload(release="", cv_version="4.21.3"))
GOLDEN["data-config-merge-kept"] = base_worker() + [mc("10-merge-data", config=ign(ignition={"version": "3.5.0", "config": {"merge": [{"source": "data:,%7B%22ignition%22%3A%7B%22version%22%3A%223.5.0%22%7D%7D"}]}}))]
# remote sources, served by the test's httptest server
GOLDEN["remote-file-gzip"] = base_worker() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/big.conf", None, contents={"source": "{{URL}}/files/big.conf"})]}))]
GOLDEN["remote-file-incompressible"] = base_worker() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/random.bin", None, contents={"source": "{{URL}}/files/random.bin"})]}))]
GOLDEN["remote-file-precompressed"] = base_worker() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/hello", None, contents={"source": "{{URL}}/files/hello.gz", "compression": "gzip"})]}))]
GOLDEN["remote-file-verified"] = base_worker() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/big.conf", None, contents={"source": "{{URL}}/files/big.conf", "verification": {"hash": "{{SHA512:big.conf}}"}})]}))]
GOLDEN["remote-append-and-ca"] = base_worker() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "security": {"tls": {"certificateAuthorities": [{"source": "{{URL}}/files/hello.txt"}]}}},
    storage={"files": [f3("/etc/hello", "local\n", append=[{"source": "{{URL}}/files/hello.txt"}])]}))]
GOLDEN["remote-config-merge"] = base_worker() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "config": {"merge": [{"source": "{{URL}}/configs/merge.ign"}]}},
    storage={"files": [f3("/etc/local", "local\n")]}))]
GOLDEN["remote-config-replace"] = base_worker() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "config": {"replace": {"source": "{{URL}}/configs/replace.ign"}}},
    storage={"files": [f3("/etc/replaced-away", "gone\n")]}))]
GOLDEN["remote-config-nested"] = base_worker() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "config": {"merge": [{"source": "{{URL}}/configs/nested.ign"}]}}))]
GOLDEN["remote-flaky-retried"] = base_worker() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/flaky", None, contents={"source": "{{URL}}/flaky"})]}))]

def bad_base():
    return base_worker()
BAD["ignition-unknown-version"] = bad_base() + [mc("10-bad", config={"ignition": {"version": "9.9.0"}})]
BAD["ignition-version-not-semver"] = bad_base() + [mc("10-bad", config={"ignition": {"version": "three"}})]
BAD["ignition-empty-object"] = bad_base() + [mc("10-bad", config={})]
BAD["ignition-wrong-type"] = bad_base() + [mc("10-bad", config={"ignition": {"version": "3.5.0"}, "storage": {"files": "not-a-list"}})]
BAD["ignition-duplicate-file"] = bad_base() + [mc("10-bad", config=ign(storage={"files": [f3("/etc/a", "1"), f3("/etc/a", "2")]}))]
BAD["ignition-relative-path"] = bad_base() + [mc("10-bad", config=ign(storage={"files": [f3("etc/a", "1")]}))]
BAD["mode-04755"] = bad_base() + [mc("10-bad", config=ign(storage={"files": [f3("/usr/local/bin/suid", "x", mode=0o4755)]}))]
BAD["mode-01777"] = bad_base() + [mc("10-bad", config=ign(storage={"files": [f3("/etc/sticky", "x", mode=0o1777)]}))]
BAD["spec2-mode-02755"] = bad_base() + [mc("10-bad", config={"ignition": {"version": "2.2.0"}, "storage": {"files": [f2("/etc/sgid", "x", 0o2755)]}})]
BAD["spec2-non-core-user"] = bad_base() + [mc("10-bad", config={"ignition": {"version": "2.2.0"}, "passwd": {"users": [{"name": "alice", "sshAuthorizedKeys": [KEY_A]}]}})]
BAD["spec3-non-core-user"] = bad_base() + [mc("10-bad", config=ign(passwd={"users": [{"name": "core", "sshAuthorizedKeys": [KEY_A]}, {"name": "root", "sshAuthorizedKeys": [KEY_B]}]}))]
BAD["mc-osimageurl-not-a-ref"] = bad_base() + [mc("10-bad", osImageURL="not a ref;$(id)")]
BAD["payload-base-image-not-a-ref"] = (base_worker(), "worker", payload(base="not a ref;$(id)"))
BAD["unknown-kerneltype"] = bad_base() + [mc("10-bad", kernelType="lowlatency")]
BAD["unsupported-extension"] = bad_base() + [mc("10-bad", extensions=["usbguard", "wireshark"])]
BAD["kernel-devel-realtime"] = bad_base() + [mc("05-rt", kernelType="realtime"), mc("10-devel", extensions=["kernel-devel"])]
BAD["kernel-devel-64k"] = bad_base() + [mc("05-devel", extensions=["kernel-devel"]), mc("10-64k", kernelType="64k-pages")]
BAD["oversize"] = bad_base() + [mc("10-huge", config=ign(storage={"files": [f3("/etc/huge.bin", None, contents={"source": "{{URL}}/files/huge.bin"})]}))]
BAD["mc-without-labels"] = [pool("worker", selector={"matchExpressions": [{"key": "example.com/excluded", "operator": "DoesNotExist"}]})] + base_worker()[1:] + [mc("zz-unlabelled", labels={})]
BAD["empty-selector"] = [pool("worker", selector={})] + base_worker()[1:]
BAD["no-match"] = [pool("worker", selector={"matchLabels": {ROLE: "nonexistent"}})] + base_worker()[1:]
BAD["pool-not-found"] = base_worker(), "gpu"
BAD["payload-configmap-missing"] = (base_worker(), "worker", payload(with_cm=False))
BAD["remote-hash-mismatch"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/big.conf", None, contents={"source": "{{URL}}/files/big.conf", "verification": {"hash": "sha512-" + "0" * 128}})]}))]
BAD["remote-404"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/missing", None, contents={"source": "{{URL}}/missing"})]}))]
BAD["remote-slow"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/slow", None, contents={"source": "{{URL}}/slow"})]}))]
BAD["remote-500"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/broken", None, contents={"source": "{{URL}}/error"})]}))]
BAD["remote-too-large"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/toolarge", None, contents={"source": "{{URL}}/files/toolarge.bin"})]}))]
BAD["remote-credentials-redacted"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/private", None, contents={"source": "http://deploy:s3cr3t@{{HOSTPORT}}/missing"})]}))]
BAD["unsupported-scheme-s3"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/s3", None, contents={"source": "s3://bucket/key"})]}))]
BAD["unsupported-scheme-config-tftp"] = bad_base() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "config": {"merge": [{"source": "tftp://10.0.0.1/x.ign"}]}}))]
BAD["remote-config-404"] = bad_base() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "config": {"merge": [{"source": "{{URL}}/missing.ign"}]}}))]
BAD["remote-config-invalid"] = bad_base() + [mc("10-remote", config=ign(ignition={"version": "3.5.0", "config": {"replace": {"source": "{{URL}}/files/hello.txt"}}}))]
BAD["remote-hash-sha256-mismatch"] = bad_base() + [mc("10-remote", config=ign(storage={"files": [f3("/etc/big.conf", None, contents={"source": "{{URL}}/files/big.conf", "verification": {"hash": "sha256-" + "0" * 64}})]}))]
BAD["two-moduleday0s"] = bad_base() + [{"apiVersion": "kmm.sigs.x-k8s.io/v1beta1", "kind": "ModuleDay0", "metadata": {"name": n, "namespace": "openshift-kmm"},
    "spec": {"machineConfigPoolSelector": {"node-role.kubernetes.io/worker": ""}, "osMapping": {"containerImage": "registry.example.com/kmod:" + n}}} for n in ("a", "b")]
def irreconcilable(name, old_cfg, new_mc, fips=False):
    BAD[name] = [pool("worker", current=OLD)] + base_worker()[1:] + [old_rendered(old_cfg, fips=fips), new_mc]
irreconcilable("irreconcilable-disks", ign(), mc("50-disks", config=ign(storage={"disks": [{"device": "/dev/sdb", "wipeTable": True}]})))
irreconcilable("irreconcilable-filesystems", ign(), mc("50-fs", config=ign(storage={"filesystems": [{"device": "/dev/sdb1", "format": "xfs", "path": "/var/data"}]})))
irreconcilable("irreconcilable-raid", ign(), mc("50-raid", config=ign(storage={"raid": [{"name": "md0", "level": "raid1", "devices": ["/dev/sdb", "/dev/sdc"]}]})))
irreconcilable("irreconcilable-directories", ign(), mc("50-dirs", config=ign(storage={"directories": [{"path": "/var/lib/foo", "mode": 493}]})))
irreconcilable("irreconcilable-links-added", ign(), mc("50-links", config=ign(storage={"links": [{"path": "/etc/localtime", "target": "/usr/share/zoneinfo/UTC"}]})))
irreconcilable("irreconcilable-append", ign(), mc("50-append", config=ign(storage={"files": [f3("/etc/motd", None, append=[{"source": data("hi\n")}])]})))
irreconcilable("irreconcilable-groups", ign(), mc("50-groups", config=ign(passwd={"groups": [{"name": "admins"}]})))
irreconcilable("irreconcilable-non-core-user", ign(), mc("50-alice", config=ign(passwd={"users": [{"name": "alice", "sshAuthorizedKeys": [KEY_A]}]})))
irreconcilable("irreconcilable-fips", ign(), mc("50-fips", fips=True))
irreconcilable("irreconcilable-force-file", ign(), mc("50-force", config=ign(storage={"files": [f3("/run/machine-config-daemon-force", "")]})))

def write(kind, cases):
    base = os.path.join(ROOT, kind)
    for name, spec in cases.items():
        poolname, pay = "worker", payload()
        if isinstance(spec, tuple):
            if len(spec) == 2:
                spec, poolname = spec
            else:
                spec, poolname, pay = spec
        d = os.path.join(base, name)
        os.makedirs(d, exist_ok=True)
        for fn in os.listdir(d):
            if fn.endswith((".yaml", ".json")) or fn == "POOL":
                os.remove(os.path.join(d, fn))
        pools = [o for o in spec if o["kind"] == "MachineConfigPool"]
        rest = [o for o in spec if o["kind"] != "MachineConfigPool"]
        with open(os.path.join(d, "pools.yaml"), "w") as f:
            yaml.safe_dump_all(pools, f, sort_keys=False)
        if name == "json-manifests":
            pass
        with open(os.path.join(d, "machineconfigs.yaml"), "w") as f:
            yaml.safe_dump_all([o for o in rest if o["kind"] == "MachineConfig"], f, sort_keys=False, width=200)
        others = [o for o in rest if o["kind"] != "MachineConfig"]
        if others:
            with open(os.path.join(d, "other.yaml"), "w") as f:
                yaml.safe_dump_all(others, f, sort_keys=False)
        if pay:
            with open(os.path.join(d, "payload.yaml"), "w") as f:
                yaml.safe_dump_all(pay, f, sort_keys=False)
        with open(os.path.join(d, "POOL"), "w") as f:
            f.write(poolname + "\n")

BAD["invalid-json-manifest"] = bad_base()
BAD["manifest-without-kind"] = bad_base()
RAW = {  # extra files written verbatim
    ("bad", "invalid-json-manifest", "broken.json"): '{"apiVersion": "machineconfiguration.openshift.io/v1", "kind": "MachineConfig", "metadata": {"name": "10-broken"},\n',
    ("bad", "manifest-without-kind", "nokind.yaml"): "apiVersion: machineconfiguration.openshift.io/v1\nmetadata:\n  name: 10-nokind\n",
}

write("golden", GOLDEN)
write("bad", BAD)
for (kind, case, fn), text in RAW.items():
    with open(os.path.join(ROOT, kind, case, fn), "w") as f:
        f.write(text)
# JSON manifests: a v1 List in one .json file, and a bare object in another.
d = os.path.join(ROOT, "golden", "json-manifests")
os.makedirs(d, exist_ok=True)
objs = base_worker() + [mc("10-json", config=ign(storage={"files": [f3("/etc/from-json", "json\n")]}), kernelArguments=["json=1"])]
with open(os.path.join(d, "list.json"), "w") as f:
    json.dump({"apiVersion": "v1", "kind": "List", "items": objs[:-1]}, f, indent=2)
with open(os.path.join(d, "single.json"), "w") as f:
    json.dump(objs[-1], f, indent=2)
with open(os.path.join(d, "payload.json"), "w") as f:
    json.dump({"apiVersion": "v1", "kind": "List", "items": payload()}, f, indent=2)
with open(os.path.join(d, "POOL"), "w") as f:
    f.write("worker\n")
print(len(os.listdir(os.path.join(ROOT, "golden"))), "golden,", len(os.listdir(os.path.join(ROOT, "bad"))), "bad")
