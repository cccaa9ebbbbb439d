"""Checks deploy/compose.yaml without a Docker engine: it parses as YAML, uses only keys of
the Compose specification where it sets them, and agrees with deploy/nginx.conf.template
and with itself (nginx's placeholders, upstreams and port, the servers' trusted proxy
address, the shared key volume, the start order, the database URL). Prints what is wrong
and exits 1, or prints one `compose: ok` line.

    python deploy/check-compose.py        # with PyYAML (the project's .venv has it)
"""
import ipaddress
import os
import re
import sys

import yaml

here = os.path.dirname(os.path.abspath(__file__))
doc = yaml.safe_load(open(os.path.join(here, "compose.yaml")))
template = open(os.path.join(here, "nginx.conf.template")).read()
errors = []

# Keys of the Compose specification (schema/compose-spec.json) that a service, its build,
# its health check, a service's network entry and a network may have.
SERVICE_KEYS = set("""annotations attach blkio_config build cap_add cap_drop cgroup cgroup_parent command
    configs container_name cpu_count cpu_percent cpu_period cpu_quota cpu_rt_period cpu_rt_runtime
    cpu_shares cpus cpuset credential_spec depends_on deploy develop device_cgroup_rules devices dns
    dns_opt dns_search domainname entrypoint env_file environment expose extends external_links
    extra_hosts gpus group_add healthcheck hostname image init ipc isolation label_file labels links
    logging mac_address mem_limit mem_reservation mem_swappiness memswap_limit models network_mode
    networks oom_kill_disable oom_score_adj pid pids_limit platform ports post_start pre_stop
    privileged profiles provider pull_policy pull_refresh_after read_only restart runtime scale
    secrets security_opt shm_size stdin_open stop_grace_period stop_signal storage_opt sysctls tmpfs
    tty ulimits use_api_socket user userns_mode uts volumes volumes_from working_dir""".split())
BUILD_KEYS = set("""additional_contexts args cache_from cache_to context dockerfile dockerfile_inline
    entitlements extra_hosts isolation labels network no_cache platforms privileged pull secrets
    shm_size ssh tags target ulimits""".split())
HEALTHCHECK_KEYS = {"disable", "interval", "retries", "start_interval", "start_period", "test", "timeout"}
SERVICE_NETWORK_KEYS = {"aliases", "driver_opts", "gw_priority", "interface_name", "ipv4_address",
                        "ipv6_address", "link_local_ips", "mac_address", "priority"}
NETWORK_KEYS = {"attachable", "driver", "driver_opts", "enable_ipv4", "enable_ipv6", "external",
                "internal", "ipam", "labels", "name"}
CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}


def extension(key):
    return key.startswith("x-")


for key in doc:
    if key not in {"name", "services", "networks", "volumes", "secrets", "configs", "include", "models"} \
            and not extension(key):
        errors.append(f"top level: {key} is not a Compose key")
services = doc.get("services") or {}
networks = doc.get("networks") or {}
volumes = doc.get("volumes") or {}

for name, service in services.items():
    where = f"services.{name}"
    for key in service:
        if key not in SERVICE_KEYS and not extension(key):
            errors.append(f"{where}: {key} is not a Compose key")
    for key in (service.get("build") or {}):
        if key not in BUILD_KEYS:
            errors.append(f"{where}.build: {key} is not a Compose key")
    for key, value in (service.get("healthcheck") or {}).items():
        if key not in HEALTHCHECK_KEYS:
            errors.append(f"{where}.healthcheck: {key} is not a Compose key")
        if key in {"interval", "timeout", "start_period"} and not isinstance(value, str):
            errors.append(f"{where}.healthcheck.{key}: a duration string, such as 5s")
    for key in ("restart", "stop_grace_period", "stop_signal"):
        if key in service and not isinstance(service[key], str):
            errors.append(f"{where}.{key}: must be a string")
    for variable, value in (service.get("environment") or {}).items():
        if not isinstance(value, (str, int, float, bool, type(None))):
            errors.append(f"{where}.environment.{variable}: not a scalar")
    for dependency, how in (service.get("depends_on") or {}).items():
        if dependency not in services:
            errors.append(f"{where}: depends on {dependency}, which is not a service")
        elif how.get("condition") not in CONDITIONS:
            errors.append(f"{where}.depends_on.{dependency}: condition {how.get('condition')}")
        elif how["condition"] == "service_healthy" and "healthcheck" not in services[dependency]:
            errors.append(f"{where}: waits for {dependency} to be healthy, which has no healthcheck here")
    for mount in service.get("volumes") or []:
        source = mount.split(":")[0]
        if source.startswith("."):
            if not os.path.exists(os.path.join(here, source)):
                errors.append(f"{where}: {source} does not exist next to compose.yaml")
        elif not source.startswith("/") and source not in volumes:
            errors.append(f"{where}: volume {source} is not declared")
    joined = service.get("networks") or []
    for network in joined:
        if network not in networks:
            errors.append(f"{where}: network {network} is not declared")
        if isinstance(joined, dict):
            for key in (joined[network] or {}):
                if key not in SERVICE_NETWORK_KEYS:
                    errors.append(f"{where}.networks.{network}: {key} is not a Compose key")
for name, network in networks.items():
    for key in (network or {}):
        if key not in NETWORK_KEYS:
            errors.append(f"networks.{name}: {key} is not a Compose key")

# The topology itself.
servers = [f"kidledger-{i}" for i in (1, 2, 3)]
try:
    nginx = services["nginx"]
    env = nginx["environment"]
    placeholders = set(re.findall(r"\$\{(KIDLEDGER_[A-Z0-9_]+)\}", template))
    given = {k for k in env if k.startswith("KIDLEDGER_")}
    if placeholders != given:
        errors.append(f"nginx: the template uses {sorted(placeholders)}, compose sets {sorted(given)}")
    if not all(re.match(env.get("NGINX_ENVSUBST_FILTER", "^$"), p) for p in placeholders):
        errors.append("nginx: NGINX_ENVSUBST_FILTER does not let the template's placeholders through")
    upstreams = sorted(env[k] for k in given if k.startswith("KIDLEDGER_UPSTREAM_"))
    if upstreams != sorted(f"{s}:{services[s]['environment']['KIDLEDGER_PORT']}" for s in servers):
        errors.append(f"nginx: upstreams {upstreams} are not the three servers on their ports")
    if not any(p.endswith(f":{env['KIDLEDGER_LISTEN']}") for p in nginx.get("ports", [])):
        errors.append("nginx: the published port is not the one nginx listens on")
    address = nginx["networks"]["backend"]["ipv4_address"]
    subnet = ipaddress.ip_network(networks["backend"]["ipam"]["config"][0]["subnet"])
    if ipaddress.ip_address(address) not in subnet:
        errors.append(f"nginx: {address} is outside the network {subnet}")
    url = services["migrate"]["environment"]["KIDLEDGER_DATABASE_URL"]
    if "@postgres:" not in url:
        errors.append("migrate: the database URL does not name the postgres service")
    if services["migrate"]["depends_on"]["postgres"]["condition"] != "service_healthy":
        errors.append("migrate: does not wait for a healthy postgres")
    for s in servers:
        e = services[s]["environment"]
        if e.get("KIDLEDGER_TRUSTED_PROXIES") != address:
            errors.append(f"{s}: trusted proxies {e.get('KIDLEDGER_TRUSTED_PROXIES')}, nginx is {address}")
        if e.get("KIDLEDGER_DATABASE_URL") != url:
            errors.append(f"{s}: another database URL than migrate's")
        if services[s]["depends_on"].get("migrate", {}).get("condition") != "service_completed_successfully":
            errors.append(f"{s}: does not wait for migrate to finish")
    keys = [set(services[s].get("volumes") or []) for s in servers]
    if not keys[0] or keys[0] != keys[1] or keys[0] != keys[2]:
        errors.append("the three servers do not mount the same key volume")
    for s in servers:
        if nginx["depends_on"].get(s, {}).get("condition") != "service_healthy":
            errors.append(f"nginx: does not wait for {s} to be ready")
except (KeyError, TypeError, IndexError, AttributeError) as e:
    errors.append(f"missing part of the topology: {e!r}")

if errors:
    print("\n".join("compose: " + e for e in errors))
    sys.exit(1)
print(f"compose: ok ({len(services)} services: {' '.join(services)})")
