#!/usr/bin/python3
"""An offline check of deploy/k8s (there is no kubectl here): what
`kubectl apply --dry-run=client` and `kubectl kustomize` would refuse, and
cross-references they would not see.

  - every document parses (python3-yaml), has a known apiVersion/kind, a
    DNS-1123 metadata.name and no unknown top-level field;
  - workloads: the selector matches the pod template's labels; containers
    have names and images, unique port names of at most 15 characters;
    probes and Services name ports that exist; every volumeMount names a
    volume or volumeClaimTemplate; env entries have a name and exactly one
    of value/valueFrom, values are strings; requests are within limits;
  - Secrets and ConfigMaps mounted exist in the manifests or are the ones
    the comments say to create (tether-haproxy from deploy/haproxy.cfg);
  - every TETHER_* variable is one that `tether-server --help` lists;
  - cluster/kustomization.yaml: its resources exist; its patch, applied as
    a strategic merge (containers and env merged by name, `$patch: delete`),
    targets an existing Deployment and container; the patched replicas set
    TETHER_SESSION_STORE to a Service of the manifests (name and port) and
    no longer TETHER_STATE_DIR (the server refuses both);
  - deploy/haproxy.cfg names the replicas' Service and port.

Usage: /usr/bin/python3 tests/k8s_manifest_test.py --server-binary BIN [--source-dir DIR]
"""

import argparse
import copy
import os
import re
import subprocess
import sys
import unittest

import yaml

ARGS = None
KINDS = {
    ("v1", "Service"), ("v1", "Secret"), ("v1", "ConfigMap"),
    ("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"),
    ("networking.k8s.io/v1", "NetworkPolicy"),
}
TOP_LEVEL = {"apiVersion", "kind", "metadata", "spec", "type", "stringData", "data"}
DNS1123 = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# Objects the comments tell the reader to create with kubectl create.
EXTERNAL = {("ConfigMap", "tether-haproxy")}


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server-binary", required=True)
    parser.add_argument("--source-dir", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), ".."))
    args, rest = parser.parse_known_args()
    args.source_dir = os.path.abspath(args.source_dir)
    return args, rest


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d is not None]


def quantity(q):
    """A CPU or memory quantity as a number (cores, bytes)."""
    q = str(q)
    units = {"m": 1e-3, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40,
             "k": 1e3, "M": 1e6, "G": 1e9}
    for unit, factor in sorted(units.items(), key=lambda u: -len(u[0])):
        if q.endswith(unit):
            return float(q[:-len(unit)]) * factor
    return float(q)


def merge(base, patch):
    """A strategic merge patch as kubectl applies it to these manifests:
    maps merged, lists of named maps merged by name (`$patch: delete`
    removes the entry), other lists replaced."""
    out = copy.deepcopy(base)
    for k, v in patch.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        elif (isinstance(v, list) and isinstance(out.get(k), list)
              and all(isinstance(e, dict) and "name" in e for e in v + out[k])):
            merged = list(out[k])
            for e in v:
                names = [m["name"] for m in merged]
                if e.get("$patch") == "delete":
                    if e["name"] not in names:
                        raise AssertionError("%s: $patch: delete of absent %s" % (k, e["name"]))
                    merged.pop(names.index(e["name"]))
                elif e["name"] in names:
                    i = names.index(e["name"])
                    merged[i] = merge(merged[i], e)
                else:
                    merged.append(e)
            out[k] = merged
        else:
            out[k] = copy.deepcopy(v)
    return out


class ManifestTest(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.k8s = os.path.join(ARGS.source_dir, "deploy", "k8s")
        cls.cluster = os.path.join(cls.k8s, "cluster")
        help_text = subprocess.run([ARGS.server_binary, "--help"], capture_output=True,
                                   text=True).stdout
        cls.variables = set(re.findall(r"TETHER_[A-Z0-9_]+", help_text))
        cls.assertTrue(cls, len(cls.variables) > 10)

    def objects(self, paths):
        docs = []
        for p in paths:
            docs += [(p, d) for d in load(p)]
        return docs

    def check(self, docs):
        """Checks a set of objects applied together."""
        by_kind = {}
        for path, d in docs:
            where = "%s: %s/%s" % (os.path.relpath(path, ARGS.source_dir), d.get("kind"),
                                   d.get("metadata", {}).get("name"))
            self.assertIn((d.get("apiVersion"), d.get("kind")), KINDS, where)
            self.assertLessEqual(set(d), TOP_LEVEL, where)
            self.assertRegex(d["metadata"]["name"], DNS1123, where)
            by_kind.setdefault(d["kind"], {})[d["metadata"]["name"]] = d
        workloads = dict(by_kind.get("Deployment", {}), **by_kind.get("StatefulSet", {}))
        for name, w in workloads.items():
            self.check_workload(name, w, by_kind)
        for name, s in by_kind.get("Service", {}).items():
            pods = [w for w in workloads.values()
                    if s["spec"]["selector"].items()
                    <= w["spec"]["template"]["metadata"]["labels"].items()]
            self.assertEqual(len(pods), 1, "Service %s selects %d workloads" % (name, len(pods)))
            names = {p["name"] for c in pods[0]["spec"]["template"]["spec"]["containers"]
                     for p in c.get("ports", [])}
            for port in s["spec"]["ports"]:
                t = port.get("targetPort", port["port"])
                if isinstance(t, str):
                    self.assertIn(t, names, "Service %s targetPort" % name)
        for name, n in by_kind.get("NetworkPolicy", {}).items():
            selected = [w for w in workloads.values()
                        if n["spec"]["podSelector"]["matchLabels"].items()
                        <= w["spec"]["template"]["metadata"]["labels"].items()]
            self.assertTrue(selected, "NetworkPolicy %s selects nothing" % name)
        return by_kind

    def check_workload(self, name, w, by_kind):
        spec = w["spec"]
        labels = spec["template"]["metadata"]["labels"]
        self.assertLessEqual(spec["selector"]["matchLabels"].items(), labels.items(), name)
        pod = spec["template"]["spec"]
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        volumes.update({v["metadata"]["name"]: v for v in spec.get("volumeClaimTemplates", [])})
        for v in pod.get("volumes", []):
            if "secret" in v:
                ref = ("Secret", v["secret"]["secretName"])
            elif "configMap" in v:
                ref = ("ConfigMap", v["configMap"]["name"])
            else:
                continue
            self.assertTrue(ref[1] in by_kind.get(ref[0], {}) or ref in EXTERNAL,
                            "%s: volume %s: no %s %s" % (name, v["name"], *ref))
        for c in pod["containers"]:
            where = "%s/%s" % (name, c.get("name"))
            self.assertTrue(c.get("name") and c.get("image"), where)
            ports = [p["name"] for p in c.get("ports", []) if "name" in p]
            self.assertEqual(len(ports), len(set(ports)), where)
            for p in ports:
                self.assertLessEqual(len(p), 15, where)
            for m in c.get("volumeMounts", []):
                self.assertIn(m["name"], volumes, where + " volumeMount")
            for e in c.get("env", []):
                self.assertIn("name", e, where)
                self.assertEqual(("value" in e) + ("valueFrom" in e), 1, where + " " + e["name"])
                if "value" in e:
                    self.assertIsInstance(e["value"], str, where + " " + e["name"])
                if e["name"].startswith("TETHER_") and c["name"] == "tether-server":
                    self.assertIn(e["name"], self.variables, where + ": not a server variable")
            for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
                for kind in ("tcpSocket", "httpGet", "grpc"):
                    port = c.get(probe, {}).get(kind, {}).get("port")
                    if isinstance(port, str):
                        self.assertIn(port, ports, "%s %s" % (where, probe))
            res = c.get("resources", {})
            for r, v in res.get("requests", {}).items():
                if r in res.get("limits", {}):
                    self.assertLessEqual(quantity(v), quantity(res["limits"][r]), where + " " + r)

    def test_single_replica_manifests(self):
        paths = [os.path.join(self.k8s, f) for f in ("secret.yaml", "service.yaml",
                                                     "deployment.yaml")]
        self.check(self.objects(paths))

    def test_cluster_kustomization(self):
        kustomization = load(os.path.join(self.cluster, "kustomization.yaml"))[0]
        self.assertEqual(kustomization["kind"], "Kustomization")
        paths = [os.path.normpath(os.path.join(self.cluster, r))
                 for r in kustomization["resources"]]
        for p in paths:
            self.assertTrue(os.path.isfile(p), p)
        docs = self.objects(paths)
        # The Secret is made with kubectl create (../secret.yaml, its
        # placeholders, stands in for it here).
        docs += self.objects([os.path.join(self.k8s, "secret.yaml")])
        for entry in kustomization["patches"]:
            patch = load(os.path.join(self.cluster, entry["path"]))[0]
            targets = [i for i, (_, d) in enumerate(docs)
                       if (d["kind"], d["metadata"]["name"])
                       == (patch["kind"], patch["metadata"]["name"])]
            self.assertEqual(len(targets), 1, entry["path"])
            path, base = docs[targets[0]]
            names = {c["name"] for c in base["spec"]["template"]["spec"]["containers"]}
            for c in patch["spec"]["template"]["spec"]["containers"]:
                self.assertIn(c["name"], names, entry["path"])
            docs[targets[0]] = (path, merge(base, patch))
        by_kind = self.check(docs)
        server = next(c for c in by_kind["Deployment"]["tether"]["spec"]["template"]["spec"]
                      ["containers"] if c["name"] == "tether-server")
        env = {e["name"]: e.get("value") for e in server["env"]}
        self.assertNotIn("TETHER_STATE_DIR", env)
        store = re.match(r"^redis://([a-z0-9-]+)\.default\.svc\.cluster\.local:(\d+)$",
                         env["TETHER_SESSION_STORE"])
        self.assertTrue(store, env["TETHER_SESSION_STORE"])
        service = by_kind["Service"][store.group(1)]
        self.assertIn(int(store.group(2)), [p["port"] for p in service["spec"]["ports"]])
        # The proxy's configuration names the replicas' Service and port.
        with open(os.path.join(ARGS.source_dir, "deploy", "haproxy.cfg")) as f:
            cfg = f.read()
        target = re.search(r"server-template \S+ \d+ ([a-z0-9-]+)\.default\.svc\.cluster\.local:"
                           r"(\d+)", cfg)
        self.assertTrue(target)
        replicas = by_kind["Service"][target.group(1)]
        self.assertIn(int(target.group(2)), [p["port"] for p in replicas["spec"]["ports"]])
        self.assertIn("balance hdr(tether-session-id)", cfg)

    def test_merge_refuses_a_delete_of_nothing(self):
        # The patch check can fail: deleting an absent variable is an error.
        with self.assertRaises(AssertionError):
            merge({"env": [{"name": "A", "value": "1"}]},
                  {"env": [{"name": "B", "$patch": "delete"}]})


def main():
    global ARGS
    ARGS, rest = parse_args()
    program = unittest.main(argv=[sys.argv[0]] + rest, exit=False)
    return 0 if program.result.wasSuccessful() else 1


if __name__ == "__main__":
    sys.exit(main())
