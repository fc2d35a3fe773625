"""``recengine reindex --engine spark`` on a real Spark standalone cluster, from PostgreSQL.

A master and two workers, each its own JVM on 127.0.0.1, started with the ``spark-class``
script PySpark ships (``org.apache.spark.deploy.master.Master`` / ``...worker.Worker``, as
``sbin/start-master.sh`` and ``start-worker.sh`` of a Spark distribution run them). The CLI is
the driver (its own process, ``--master spark://...``); the executors on the two workers read
their id ranges from PostgreSQL and the results are written back in bulk. The answer must be
the local engine's: the same IDF model, features and clusters. Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy.orm import Session, sessionmaker

from recengine.config import Settings
from recengine.pipeline.featurize import Featurizer
from tests import jvm
from tests.factories import javaguide_records
from tests.reindex.test_spark import assert_same_results, clusters, engine_state, indexed, reposts

ON_POSTGRES = pytest.mark.parametrize("database_url", ["postgresql"], indirect=True)
pytestmark = [pytest.mark.postgres, pytest.mark.slow, ON_POSTGRES]
START_S = 180.0  # JVM start-ups on a loaded 2-core machine
JOB_S = 600.0
CLI = "from recengine.cli import main; main()"
APP = "recengine-reindex"
MASTER = "org.apache.spark.deploy.master.Master"
WORKER = "org.apache.spark.deploy.worker.Worker"
WORKER_SIZE = ["--cores", "1", "--memory", "1g"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def spark_class() -> Path:
    import pyspark

    script = Path(pyspark.__file__).parent / "bin" / "spark-class"
    assert script.is_file(), f"PySpark ships no {script}"
    return script


def spark_env(work: Path) -> dict[str, str]:
    return {
        **os.environ,
        "SPARK_HOME": str(spark_class().parent.parent),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "SPARK_LOG_DIR": str(work / "logs"),
        "SPARK_WORKER_DIR": str(work / "worker"),
        "PYSPARK_PYTHON": sys.executable,
        "SPARK_DAEMON_JAVA_OPTS": jvm.FLAGS,
    }


def cluster_state(ui: int) -> dict[str, Any]:
    with urllib.request.urlopen(f"http://127.0.0.1:{ui}/json/", timeout=10) as reply:
        found: dict[str, Any] = json.load(reply)
        return found


def wait_for_workers(ui: int, processes: list[subprocess.Popen[bytes]], n: int) -> None:
    deadline = time.monotonic() + START_S
    while time.monotonic() < deadline:
        assert all(p.poll() is None for p in processes), "a Spark JVM exited"
        try:
            if cluster_state(ui).get("aliveworkers") == n:
                return
        except OSError:
            pass  # the master's UI is not up yet
        time.sleep(0.5)  # polling a JVM start-up, bounded by the deadline above
    raise AssertionError(f"{n} Spark workers not registered within {START_S} s")


@dataclass(frozen=True)
class Cluster:
    url: str  # spark://127.0.0.1:<port>
    ui: int  # the master's web UI port (its /json/ state)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A running master with two registered workers."""
    work = tmp_path_factory.mktemp("spark-cluster")
    env = spark_env(work)
    port, ui = free_port(), free_port()
    run = [str(spark_class())]
    logs = (work / "jvm.log").open("wb")
    master = subprocess.Popen(
        [*run, MASTER, "--host", "127.0.0.1", "--port", str(port), "--webui-port", str(ui)],
        env=env,
        stdout=logs,
        stderr=subprocess.STDOUT,
    )
    url = f"spark://127.0.0.1:{port}"
    workers = [
        subprocess.Popen(
            [
                *run,
                WORKER,
                "--host",
                "127.0.0.1",
                *WORKER_SIZE,
                "--webui-port",
                str(free_port()),
                "--work-dir",
                str(work / f"worker-{n}"),
                url,
            ],
            env=env,
            stdout=logs,
            stderr=subprocess.STDOUT,
        )
        for n in range(2)
    ]
    processes = [master, *workers]
    try:
        wait_for_workers(ui, processes, 2)
        yield Cluster(url, ui)
    finally:
        for p in reversed(processes):
            p.terminate()
        for p in processes:
            try:
                p.wait(timeout=30)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=10)
        logs.close()


def test_cluster_reindex_from_postgresql_equals_the_local_engine(
    cluster: Cluster,
    factory: sessionmaker[Session],
    featurizer: Featurizer,
    settings: Settings,
    data_dir: Path,
    tmp_path: Path,
) -> None:
    records = javaguide_records(data_dir, 150)
    local = indexed(factory, featurizer, records + reposts(records, 30))
    local_clusters = clusters(factory)
    assert len({c for _, c, _, _ in local_clusters}) >= 15  # the reposts were found
    env = {
        **spark_env(tmp_path),
        "RECENGINE_DATABASE_URL": settings.resolved_database_url,
        "RECENGINE_DATA_DIR": str(settings.data_dir),
        "RECENGINE_SPARK__READ_PARTITION_ROWS": "100",  # several tasks on each executor
        "RECENGINE_SPARK__PARTITIONS": "4",
        "PYSPARK_SUBMIT_ARGS": "--conf spark.executor.memory=768m --conf spark.cores.max=2 "
        f"--driver-java-options '{jvm.FLAGS}' "
        f"--conf 'spark.executor.extraJavaOptions={jvm.FLAGS}' "
        "pyspark-shell",
    }
    done = subprocess.run(
        [sys.executable, "-c", CLI, "reindex", "--engine", "spark", "--master", cluster.url],
        env=env,
        capture_output=True,
        text=True,
        timeout=JOB_S,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "reindexed 180 articles" in done.stdout, done.stdout
    assert_same_results(local, engine_state(factory))
    assert clusters(factory) == local_clusters
    apps = [a for a in cluster_state(cluster.ui)["completedapps"] if a["name"] == APP]
    assert len(apps) == 1 and apps[0]["state"] == "FINISHED"  # it ran on the cluster
    assert apps[0]["cores"] == 2  # one executor core on each worker
