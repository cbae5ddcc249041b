"""Servers: start and stop real engines on loopback with security features toggled, or name
existing ones. Every class is a context manager; see each module."""

from .base import Server
from .certs import CertificateSet, make_certificates, probe_tls
from .endpoints import HttpEndpoint, MongoEndpoint, MySQLEndpoint, server_offers_tls, session_tls
from .external import ExternalMongo, ExternalMySQL
from .ferretdb import FerretDBServer
from .mariadb import MariaDBServer
from .nginx import NginxServer
from .process import live_processes, stop_all, sweep_stale

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
