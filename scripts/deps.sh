#!/usr/bin/env bash
# Installs the Debian packages scadles needs that are not installed yet.
# Usage: scripts/deps.sh [extra-package ...]
set -eu
pkgs=(build-essential pkg-config librdkafka-dev libjansson-dev libopenblas-dev libcmocka-dev
      zlib1g-dev libmicrohttpd-dev libavro-dev libcurl4-openssl-dev dataset-fashion-mnist clang-format gnuplot-nox kcat jq valgrind
      python3-confluent-kafka python3-venv openssl prometheus curl "$@")
# jq reads the summaries in tests/integration/*.sh and bench/*.sh; openssl
# makes the CA and broker certificate of the TLS/SASL broker
# (scripts/kafka.sh with KAFKA_SECURITY=sasl_ssl); libmicrohttpd serves
# /metrics and /healthz (metrics.listen); prometheus (with promtool) and curl
# scrape and check them in tests/integration/metrics_prometheus.sh.
# libavro parses the Avro schemas of avro topics and libcurl fetches them
# from a Schema Registry. Go builds the registry the Avro tests start
# (tests/tools/srfake, which needs Go 1.24: a Go of 1.21 or later fetches
# that toolchain itself); Debian's golang-go only when no Go is installed.
command -v go >/dev/null || [ -x /usr/local/go/bin/go ] || pkgs+=(golang-go)
# Java 17+ and Maven run the real Apache Kafka broker of the integration tests
# (scripts/kafka.sh); any installed JDK will do.
command -v java >/dev/null || pkgs+=(openjdk-17-jre-headless)
command -v mvn >/dev/null || pkgs+=(maven)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
echo "deps: installing ${missing[*]}" >&2
sudo=""
[ "$(id -u)" -ne 0 ] && sudo="sudo"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
