"""Servers: start and stop real engines on loopback with security features toggled, or name
existing ones. Every class is a context manager; see each module."""

from secoverhead.host.process import live_processes, stop_all, sweep_stale
from secoverhead.servers.base import Server
from secoverhead.servers.certs import CertificateSet, make_certificates, probe_tls
from secoverhead.servers.endpoints import HttpEndpoint, MongoEndpoint, MySQLEndpoint, server_offers_tls, session_tls
from secoverhead.servers.external import ExternalMongo, ExternalMySQL
from secoverhead.servers.ferretdb import FerretDBServer
from secoverhead.servers.mariadb import MariaDBServer
from secoverhead.servers.nginx import NginxServer

__all__ = [
    "CertificateSet",
    "ExternalMongo",
    "ExternalMySQL",
    "FerretDBServer",
    "HttpEndpoint",
    "MariaDBServer",
    "MongoEndpoint",
    "MySQLEndpoint",
    "NginxServer",
    "Server",
    "live_processes",
    "make_certificates",
    "probe_tls",
    "server_offers_tls",
    "session_tls",
    "stop_all",
    "sweep_stale",
]
