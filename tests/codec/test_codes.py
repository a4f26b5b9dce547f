"""Codes and MQVersion ordinals, checked against the Apache RocketMQ sources when they are on the machine."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

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

MIRROR = Path("/work/.mirror/apache+rocketmq/repo")
P4 = "common/src/main/java/org/apache/rocketmq/common/protocol"
P5 = "remoting/src/main/java/org/apache/rocketmq/remoting/protocol"


def _java_source(ref: str, path: str) -> str:
    if not MIRROR.exists() or shutil.which("git") is None:
        pytest.skip("apache/rocketmq mirror not on this machine")
    result = subprocess.run(
        ["git", "-C", str(MIRROR), "show", f"{ref}:{path}"], capture_output=True, text=True, check=False
    )
    if result.returncode != 0:
        pytest.skip(f"{ref}:{path} not in the mirror")
    return result.stdout


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


@pytest.mark.parametrize("ref", ["rocketmq-all-4.9.8", "rocketmq-all-5.3.3"])
def test_version_names_match_mqversion_java(ref: str) -> None:
    source = _java_source(ref, "common/src/main/java/org/apache/rocketmq/common/MQVersion.java")
    body = source[source.index("enum Version") :]
    names = re.findall(r"\b(V\d\w*|HIGHER_VERSION)\b", body[: body.index("}")])
    assert list(version_names()) == names
    current = re.search(r"CURRENT_VERSION = Version\.(\w+)\.ordinal", source)
    assert current is not None
    assert version_ordinal(current[1]) == {"rocketmq-all-4.9.8": 409, "rocketmq-all-5.3.3": 479}[ref]


def test_request_codes_are_the_union_of_4_9_8_and_5_3_3() -> None:
    java = _int_constants(_java_source("rocketmq-all-4.9.8", f"{P4}/RequestCode.java"))
    java |= _int_constants(_java_source("rocketmq-all-5.3.3", f"{P5}/RequestCode.java"))
    ours = {member.name: member.value for member in RequestCode}
    assert {k: v for k, v in ours.items() if k in java} == java
    assert set(java) <= set(ours)


def test_response_codes_match_java() -> None:
    java = _int_constants(_java_source("rocketmq-all-4.9.8", f"{P4}/ResponseCode.java"))
    java |= _int_constants(_java_source("rocketmq-all-5.3.3", f"{P5}/ResponseCode.java"))
    java |= _int_constants(_java_source("rocketmq-all-5.3.3", f"{P5}/RemotingSysResponseCode.java"))
    for name, value in java.items():
        assert ResponseCode[name] == value


def test_language_codes_match_java() -> None:
    source = _java_source("rocketmq-all-5.3.3", f"{P5}/LanguageCode.java")
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
