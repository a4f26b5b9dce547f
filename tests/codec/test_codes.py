"""Codes and MQVersion ordinals, checked against Apache RocketMQ's Java (Maven Central's sources jars)."""

from __future__ import annotations

import re
import zipfile

import pytest

from rmqtwin.codec.codes import (
    CURRENT_VERSION_4,
    CURRENT_VERSION_5,
    HIGHER_VERSION,
    LanguageCode,
    RequestCode,
    ResponseCode,
    SerializeType,
    language_name,
    request_code_name,
    response_code_name,
    version_name,
    version_names,
    version_ordinal,
)
from rmqtwin.conformance.launcher import fetch_sources, maven_executable, sources_dir

P4 = "org/apache/rocketmq/common/protocol"  # rocketmq-common 4.9.x
P5 = "org/apache/rocketmq/remoting/protocol"  # rocketmq-remoting 5.x
MQVERSION = "org/apache/rocketmq/common/MQVersion.java"  # rocketmq-common, both lines
RELEASES_5 = ("5.3.3", "5.5.0")


def _java_source(artifact: str, version: str, path: str) -> str:
    """One file of ``<artifact>-<version>-sources.jar`` (cached by set-up's ``rmqtwin real fetch``)."""
    jar = sources_dir() / f"{artifact}-{version}-sources.jar"
    if not jar.exists() and maven_executable() is None:
        pytest.skip(f"{jar.name} is not cached and mvn (Maven) is not installed to fetch it")
    with zipfile.ZipFile(fetch_sources(artifact, version)) as sources:
        return sources.read(path).decode()


def _int_constants(source: str) -> dict[str, int]:
    return {m[1]: int(m[2]) for m in re.finditer(r"int\s+([A-Z0-9_]+)\s*=\s*(-?\d+)\s*;", source)}


def test_release_ordinals_from_protocol_sheet() -> None:
    table = {
        "4.5.2": 317,
        "4.9.0": 393,
        "4.9.4": 401,
        "4.9.7": 407,
        "4.9.8": 409,
        "5.0.0": 413,
        "5.1.0": 433,
        "5.1.4": 441,
        "5.2.0": 453,
        "5.3.0": 473,
        "5.3.3": 479,
    }
    for release, ordinal in table.items():
        assert version_ordinal(release) == ordinal
        assert version_name(ordinal) == "V" + release.replace(".", "_")
    assert version_ordinal("V3_0_11") == 37
    assert version_ordinal("3.4.9") == 121
    assert version_ordinal("4.1.0-SNAPSHOT") == 232
    assert version_ordinal("V3_0_7_SNAPSHOT") == 28
    assert version_ordinal("5.5.0") == CURRENT_VERSION_5 == 413 + 2 * 50
    assert CURRENT_VERSION_4 == 409
    assert version_name(HIGHER_VERSION) == "HIGHER_VERSION" == version_name(10_000)
    with pytest.raises(ValueError):
        version_ordinal("6.0.0")
    with pytest.raises(ValueError):
        version_ordinal("nonsense")
    with pytest.raises(ValueError):
        version_name(-1)


@pytest.mark.parametrize(("release", "current"), [("4.9.8", 409), ("5.3.3", 479), ("5.5.0", 513)])
def test_version_names_match_mqversion_java(release: str, current: int) -> None:
    source = _java_source("rocketmq-common", release, MQVERSION)
    body = source[source.index("enum Version") :]
    names = re.findall(r"\b(V\d\w*|HIGHER_VERSION)\b", body[: body.index("}")])
    assert list(version_names()) == names
    found = re.search(r"CURRENT_VERSION = Version\.(\w+)\.ordinal", source)
    assert found is not None
    assert version_ordinal(found[1]) == current


def test_request_codes_are_the_union_of_4_9_8_and_5_x() -> None:
    java = _int_constants(_java_source("rocketmq-common", "4.9.8", f"{P4}/RequestCode.java"))
    for release in RELEASES_5:
        java |= _int_constants(_java_source("rocketmq-remoting", release, f"{P5}/RequestCode.java"))
    ours = {member.name: member.value for member in RequestCode}
    assert {k: v for k, v in ours.items() if k in java} == java
    assert set(java) <= set(ours)


def test_response_codes_match_java() -> None:
    java = _int_constants(_java_source("rocketmq-common", "4.9.8", f"{P4}/ResponseCode.java"))
    for release in RELEASES_5:
        java |= _int_constants(_java_source("rocketmq-remoting", release, f"{P5}/ResponseCode.java"))
        sys_codes = _java_source("rocketmq-remoting", release, f"{P5}/RemotingSysResponseCode.java")
        java |= _int_constants(sys_codes)
    for name, value in java.items():
        assert ResponseCode[name] == value


@pytest.mark.parametrize("release", RELEASES_5)
def test_language_codes_match_java(release: str) -> None:
    source = _java_source("rocketmq-remoting", release, f"{P5}/LanguageCode.java")
    java = {m[1]: int(m[2]) for m in re.finditer(r"([A-Z_]+)\(\(byte\)\s*(\d+)\)", source)}
    assert java == {lc.name: lc.value for lc in LanguageCode}


def test_duplicated_response_numbers_and_unknown_codes() -> None:
    assert ResponseCode(209) is ResponseCode.UPDATE_AND_CREATE_ACL_CONFIG_FAILED is ResponseCode.POLLING_FULL
    assert response_code_name(209) == "UPDATE_AND_CREATE_ACL_CONFIG_FAILED"
    assert response_code_name(210, major=5) == "POLLING_TIMEOUT"
    assert response_code_name(211, major=5) == "BROKER_NOT_EXIST"
    assert response_code_name(17, major=5) == "TOPIC_NOT_EXIST"
    assert response_code_name(12345) == "12345"
    assert request_code_name(310) == "SEND_MESSAGE_V2"
    assert request_code_name(200050) == "POP_MESSAGE"
    assert request_code_name(9999) == "9999"
    assert language_name(13) == "NODE_JS" and language_name(99) == "99"
    assert (SerializeType.JSON, SerializeType.ROCKETMQ) == (0, 1)
    sys_codes = [ResponseCode(i).name for i in range(5)]
    assert sys_codes == [
        "SUCCESS",
        "SYSTEM_ERROR",
        "SYSTEM_BUSY",
        "REQUEST_CODE_NOT_SUPPORTED",
        "TRANSACTION_FAILED",
    ]
