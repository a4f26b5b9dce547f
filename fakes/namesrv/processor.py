"""The name server's request handlers (Java ``DefaultRequestProcessor`` + ``ClientRequestProcessor``).

Unknown codes get REQUEST_CODE_NOT_SUPPORTED, as the 5.x name server answers (4.9 stays silent).
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Callable
from typing import TYPE_CHECKING

from rmqtwin.codec.bodies import (
    DataVersion,
    KVTable,
    RegisterBrokerBody,
    TopicConfigSerializeWrapper,
    TopicList,
    TopicRouteData,
    route_standard_json,
)
from rmqtwin.codec.codes import RequestCode, ResponseCode
from rmqtwin.codec.errors import HeaderFieldError
from rmqtwin.codec.headers import (
    AddWritePermOfBrokerRequestHeader,
    AddWritePermOfBrokerResponseHeader,
    DeleteKVConfigRequestHeader,
    DeleteTopicFromNamesrvRequestHeader,
    GetKVConfigRequestHeader,
    GetKVConfigResponseHeader,
    GetKVListByNamespaceRequestHeader,
    GetRouteInfoRequestHeader,
    GetTopicsByClusterRequestHeader,
    PutKVConfigRequestHeader,
    QueryDataVersionRequestHeader,
    QueryDataVersionResponseHeader,
    RegisterBrokerRequestHeader,
    RegisterBrokerResponseHeader,
    RegisterTopicRequestHeader,
    UnRegisterBrokerRequestHeader,
    WipeWritePermOfBrokerRequestHeader,
    WipeWritePermOfBrokerResponseHeader,
)
from rmqtwin.fakes.dispatch import Channel, Dispatcher, decode_header, response, suggest_todo
from rmqtwin.fakes.namesrv.routeinfo import RouteInfoManager

if TYPE_CHECKING:
    from rmqtwin.codec.command import RemotingCommand

NAMESPACE_ORDER_TOPIC_CONFIG = "ORDER_TOPIC_CONFIG"
V3_0_11 = 37


class KVConfigManager:
    """namespace → key → value (``kvConfig.json`` in the real name server)."""

    def __init__(self) -> None:
        self.config_table: dict[str, dict[str, str]] = {}

    def put(self, namespace: str, key: str, value: str) -> None:
        self.config_table.setdefault(namespace, {})[key] = value

    def get(self, namespace: str, key: str) -> str | None:
        return self.config_table.get(namespace, {}).get(key)

    def delete(self, namespace: str, key: str) -> None:
        table = self.config_table.get(namespace)
        if table is not None:
            table.pop(key, None)

    def namespace(self, namespace: str) -> dict[str, str] | None:
        table = self.config_table.get(namespace)
        return dict(table) if table else None


def namesrv_config_defaults(five: bool, listen_port: int = 9876) -> dict[str, str]:
    """What GET_NAMESRV_CONFIG lists (``Configuration`` over NamesrvConfig and NettyServerConfig, the
    line's fields at their defaults; user.home and ROCKETMQ_HOME are this process's)."""
    home = os.path.expanduser("~")
    config = {
        "rocketmqHome": os.environ.get("ROCKETMQ_HOME", os.getcwd()),
        "kvConfigPath": os.path.join(home, "namesrv", "kvConfig.json"),
        "configStorePath": os.path.join(home, "namesrv", "namesrv.properties"),
        "productEnvName": "center",
        "clusterTest": "false",
        "orderMessageEnable": "false",
    }
    if five:
        config |= {
            "returnOrderTopicConfigToBroker": "true",
            "clientRequestThreadPoolNums": "8",
            "defaultThreadPoolNums": "16",
            "clientRequestThreadPoolQueueCapacity": "50000",
            "defaultThreadPoolQueueCapacity": "10000",
            "scanNotActiveBrokerInterval": "5000",
            "unRegisterBrokerQueueCapacity": "3000",
            "supportActingMaster": "false",
            "enableAllTopicList": "true",
            "enableTopicList": "true",
            "notifyMinBrokerIdChanged": "false",
            "enableControllerInNamesrv": "false",
            "needWaitForService": "false",
            "waitSecondsForService": "45",
            "deleteTopicWithBrokerRegistration": "false",
            "configBlackList": "configBlackList;configStorePath;kvConfigPath",
            "bindAddress": "0.0.0.0",
        }
    config |= {
        "listenPort": str(listen_port),
        "serverWorkerThreads": "8",
        "serverCallbackExecutorThreads": "0",
        "serverSelectorThreads": "3",
        "serverOnewaySemaphoreValue": "256",
        "serverAsyncSemaphoreValue": "64",
        "serverChannelMaxIdleTimeSeconds": "120",
        "serverSocketSndBufSize": "0",
        "serverSocketRcvBufSize": "0",
        "writeBufferHighWaterMark": "0",
        "writeBufferLowWaterMark": "0",
        "serverSocketBacklog": "1024",
        "serverPooledByteBufAllocatorEnable": "true",
        "useEpollNativeSelector": "false",
    }
    if five:
        config |= {
            "serverNettyWorkerGroupEnable": "true",
            "enableShutdownGracefully": "false",
            "shutdownWaitTimeSeconds": "30",
        }
    return config


class NamesrvProcessor:
    """Builds the name server's dispatch table over a route manager and a KV store."""

    def __init__(
        self,
        routes: RouteInfoManager,
        clock: Callable[[], float],
        *,
        order_message_enable: bool = False,
        config: dict[str, str] | None = None,
        five: bool = True,
    ) -> None:
        self.routes = routes
        self.five = five
        """Whether it answers as a 5.x name server (else as 4.9.x): unknown codes, FAQ links."""
        self.kv = KVConfigManager()
        self.clock = clock
        self.order_message_enable = order_message_enable
        self.config = config if config is not None else namesrv_config_defaults(five)
        # 4.9.7's DefaultRequestProcessor answers an unknown code with nothing; 5.5.0's with
        # REQUEST_CODE_NOT_SUPPORTED (conformance/data/request-codes-*.json).
        self.dispatcher = Dispatcher("namesrv", unknown_code_answer=five)
        table: dict[int, Callable[[Channel, RemotingCommand], RemotingCommand | None]] = {
            RequestCode.PUT_KV_CONFIG: self.put_kv_config,
            RequestCode.GET_KV_CONFIG: self.get_kv_config,
            RequestCode.DELETE_KV_CONFIG: self.delete_kv_config,
            RequestCode.GET_KVLIST_BY_NAMESPACE: self.get_kv_list_by_namespace,
            RequestCode.REGISTER_BROKER: self.register_broker,
            RequestCode.UNREGISTER_BROKER: self.unregister_broker,
            RequestCode.GET_ROUTEINFO_BY_TOPIC: self.get_route_info_by_topic,
            RequestCode.GET_BROKER_CLUSTER_INFO: self.get_broker_cluster_info,
            RequestCode.GET_ALL_TOPIC_LIST_FROM_NAMESERVER: self.get_all_topic_list,
            RequestCode.DELETE_TOPIC_IN_NAMESRV: self.delete_topic_in_namesrv,
            **({RequestCode.REGISTER_TOPIC_IN_NAMESRV: self.register_topic_in_namesrv} if five else {}),
            RequestCode.GET_TOPICS_BY_CLUSTER: self.get_topics_by_cluster,
            RequestCode.GET_SYSTEM_TOPIC_LIST_FROM_NS: self.get_system_topic_list,
            RequestCode.GET_UNIT_TOPIC_LIST: self.get_unit_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_TOPIC_LIST: self.get_has_unit_sub_topic_list,
            RequestCode.GET_HAS_UNIT_SUB_UNUNIT_TOPIC_LIST: self.get_has_unit_sub_ununit_topic_list,
            RequestCode.WIPE_WRITE_PERM_OF_BROKER: self.wipe_write_perm,
            RequestCode.ADD_WRITE_PERM_OF_BROKER: self.add_write_perm,
            RequestCode.QUERY_DATA_VERSION: self.query_data_version,
            RequestCode.GET_NAMESRV_CONFIG: self.get_namesrv_config,
            RequestCode.UPDATE_NAMESRV_CONFIG: self.update_namesrv_config,
        }
        for code, handler in table.items():
            self.dispatcher.register(code, handler)

    # -- KV config ----------------------------------------------------------------------------
    def put_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, PutKVConfigRequestHeader, strict=False)
        if header.namespace is None or header.key is None:
            return response(ResponseCode.SYSTEM_ERROR, "namespace or key is null")
        if header.value is None:
            raise HeaderFieldError.missing("value")
        self.kv.put(header.namespace, header.key, header.value)
        return response()

    def get_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, GetKVConfigRequestHeader)
        namespace, key = header.namespace, header.key
        value = self.kv.get(namespace, key)
        if value is not None:
            return response(ext_fields=GetKVConfigResponseHeader(value=value))
        return response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace} Key: {key}")

    def delete_kv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, DeleteKVConfigRequestHeader)
        self.kv.delete(header.namespace, header.key)
        return response()

    def get_kv_list_by_namespace(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        namespace = decode_header(request, GetKVListByNamespaceRequestHeader).namespace
        table = self.kv.namespace(namespace)
        if table is not None:
            return response(body=KVTable(table=table).encode(fastjson2=self.five))
        return response(ResponseCode.QUERY_NOT_FOUND, f"No config item, Namespace: {namespace}")

    # -- brokers ------------------------------------------------------------------------------
    def register_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, RegisterBrokerRequestHeader)
        body = request.body or b""
        crc = header.body_crc32 or 0
        if crc != 0 and (zlib.crc32(body) & 0x7FFFFFFF) != crc:
            return response(ResponseCode.SYSTEM_ERROR, "crc32 not match")
        wrapper: TopicConfigSerializeWrapper | None
        filter_servers: list[str] = []
        if request.version >= V3_0_11:
            if body:
                register_body = RegisterBrokerBody.decode_body(body, compressed=bool(header.compressed))
                wrapper = register_body.topic_config_serialize_wrapper
                filter_servers = register_body.filter_server_list
            else:
                wrapper = TopicConfigSerializeWrapper()
        else:
            wrapper = TopicConfigSerializeWrapper.decode(body) if body else None
        result = self.routes.register_broker(
            cluster_name=header.cluster_name,
            broker_addr=header.broker_addr,
            broker_name=header.broker_name,
            broker_id=header.broker_id,
            ha_server_addr=header.ha_server_addr,
            topic_config_wrapper=wrapper,
            filter_server_list=filter_servers,
            channel=channel,
            now=self.clock(),
            enable_acting_master=header.enable_acting_master,
            zone_name=header.zone_name,
        )
        order_conf = self.kv.namespace(NAMESPACE_ORDER_TOPIC_CONFIG)
        return response(
            ext_fields=RegisterBrokerResponseHeader(
                ha_server_addr=result.ha_server_addr, master_addr=result.master_addr
            ),
            body=KVTable(table=order_conf).encode(fastjson2=self.five) if order_conf else None,
        )

    def unregister_broker(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, UnRegisterBrokerRequestHeader)
        self.routes.unregister_broker(
            header.cluster_name, header.broker_addr, header.broker_name, header.broker_id
        )
        return response()

    def query_data_version(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        addr = decode_header(request, QueryDataVersionRequestHeader).broker_addr
        theirs = DataVersion.decode(request.body) if request.body else None
        live = self.routes.broker_live_table.get(addr)
        changed = live is None or live.data_version != theirs
        if live is not None:
            live.last_update = self.clock()
        return response(
            ext_fields=QueryDataVersionResponseHeader(changed=changed),
            body=live.data_version.encode(fastjson2=self.five) if live is not None else None,
        )

    # -- routes -------------------------------------------------------------------------------
    def get_route_info_by_topic(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, GetRouteInfoRequestHeader, strict=False)
        topic = header.topic
        # Java looks a missing topic up as null and answers TOPIC_NOT_EXIST for "null".
        route = None if topic is None else self.routes.pickup_topic_route_data(topic)
        if topic is None or route is None:
            shown = "null" if topic is None else topic
            return response(
                ResponseCode.TOPIC_NOT_EXIST,
                f"No topic route info in name server for the topic: {shown}{suggest_todo(self.five)}",
            )
        if self.order_message_enable:
            order_conf = self.kv.get(NAMESPACE_ORDER_TOPIC_CONFIG, topic)
            if order_conf is not None:
                route.order_topic_conf = order_conf
        standard = route_standard_json(request.version, header.accept_standard_json_only)
        return response(body=route.encode(standard_json=standard, fastjson2=self.five))

    def get_broker_cluster_info(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(body=self.routes.cluster_info().encode(fastjson2=self.five))

    def get_all_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(body=TopicList(topic_list=self.routes.all_topics()).encode(fastjson2=self.five))

    def get_topics_by_cluster(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        cluster = decode_header(request, GetTopicsByClusterRequestHeader).cluster
        return response(
            body=TopicList(topic_list=self.routes.topics_by_cluster(cluster)).encode(fastjson2=self.five)
        )

    def get_unit_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(
            body=TopicList(topic_list=self.routes.topics_by_sys_flag(True, False)).encode(fastjson2=self.five)
        )

    def get_has_unit_sub_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(
            body=TopicList(topic_list=self.routes.topics_by_sys_flag(None, True)).encode(fastjson2=self.five)
        )

    def get_has_unit_sub_ununit_topic_list(
        self, channel: Channel, request: RemotingCommand
    ) -> RemotingCommand:
        return response(
            body=TopicList(topic_list=self.routes.topics_by_sys_flag(False, True)).encode(fastjson2=self.five)
        )

    def get_system_topic_list(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        return response(body=self.routes.system_topics().encode(fastjson2=self.five))

    def delete_topic_in_namesrv(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        header = decode_header(request, DeleteTopicFromNamesrvRequestHeader)
        self.routes.delete_topic(header.topic, header.cluster_name or None)
        return response()

    def register_topic_in_namesrv(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        """5.x only (4.9.7's name server leaves the code unanswered, as for any it does not know)."""
        topic = decode_header(request, RegisterTopicRequestHeader).topic
        route = TopicRouteData.decode(request.body) if request.body else None
        if route is not None and route.queue_datas:
            self.routes.register_topic(topic, route.queue_datas)
        return response()

    def wipe_write_perm(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        broker_name = decode_header(request, WipeWritePermOfBrokerRequestHeader).broker_name
        count = self.routes.change_write_perm(broker_name, wipe=True)
        return response(ext_fields=WipeWritePermOfBrokerResponseHeader(wipe_topic_count=count))

    def add_write_perm(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        broker_name = decode_header(request, AddWritePermOfBrokerRequestHeader).broker_name
        count = self.routes.change_write_perm(broker_name, wipe=False)
        return response(ext_fields=AddWritePermOfBrokerResponseHeader(add_topic_count=count))

    def get_namesrv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        text = "".join(f"{k}={v}\n" for k, v in sorted(self.config.items()))
        return response(body=text.encode())

    def update_namesrv_config(self, channel: Channel, request: RemotingCommand) -> RemotingCommand:
        import io

        import javaproperties

        if request.body is None:
            return response()
        try:
            props = javaproperties.load(io.StringIO(request.body.decode("utf-8", "replace")))
        except ValueError:  # MixAll.string2Properties gives null for what Properties.load refuses
            return response(ResponseCode.SYSTEM_ERROR, "string2Properties error")
        # The paths the name server writes to may not be changed from the wire: 4.9.7 names them,
        # 5.x keeps them in namesrvConfig.configBlackList.
        if self.five and set(props) & {"configBlackList", "configStorePath", "kvConfigPath"}:
            return response(ResponseCode.NO_PERMISSION, "Can not update config in black list.")
        if not self.five and set(props) & {"configStorePath", "kvConfigPath"}:
            return response(ResponseCode.NO_PERMISSION, "Can not update config path")
        self.config.update(props)
        if "orderMessageEnable" in props:
            self.order_message_enable = props["orderMessageEnable"].strip().lower() == "true"
        return response()
