"""The plain ACL accounts the ACL tests share: the same plain_acl.yml on the twin and on real brokers (the
launcher's shared instance is keyed by its text, so tests using it alike share one real broker)."""

from __future__ import annotations

TOPIC_OK = "TopicAclOk"
TOPIC_DENY = "TopicAclDeny"
TOPIC_NEW = "TopicAclByUser"
GROUP_OK = "GroupAclOk"
GROUP_DENY = "GroupAclDeny"
ADMIN = {"accessKey": "RocketMQAdmin", "secretKey": "admin12345678"}
USER = {"accessKey": "RocketMQUser", "secretKey": "user12345678"}
SUB_ONLY = {"accessKey": "RocketMQSubOnly", "secretKey": "sub12345678"}
WRONG_SECRET = {**USER, "secretKey": "wrong1234567"}
UNKNOWN_KEY = {**USER, "accessKey": "NoSuchKey1"}

PLAIN_ACL_YML = f"""\
globalWhiteRemoteAddresses:
  - 10.254.0.*
accounts:
  - accessKey: {ADMIN["accessKey"]}
    secretKey: {ADMIN["secretKey"]}
    admin: true
  - accessKey: {USER["accessKey"]}
    secretKey: {USER["secretKey"]}
    admin: false
    defaultTopicPerm: DENY
    defaultGroupPerm: SUB
    topicPerms:
      - {TOPIC_OK}=PUB|SUB
      - {TOPIC_DENY}=DENY
    groupPerms:
      - {GROUP_DENY}=DENY
  - accessKey: {SUB_ONLY["accessKey"]}
    secretKey: {SUB_ONLY["secretKey"]}
    defaultTopicPerm: SUB
    defaultGroupPerm: SUB
"""
