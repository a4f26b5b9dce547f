"""Maps the fixed top-level folders under the one ``rmqtwin`` namespace.

``codec/`` installs as ``rmqtwin.codec`` (and so on), so installing rmqtwin never puts
modules named ``spark``, ``proxy`` or ``fakes`` on ``sys.path``.
"""

from setuptools import find_packages, setup

AREAS = ("codec", "fakes", "store_mirror", "proxy", "conformance", "spark")

packages = ["rmqtwin"]
package_dir = {"rmqtwin": "rmqtwin"}
for area in AREAS:
    packages.append(f"rmqtwin.{area}")
    package_dir[f"rmqtwin.{area}"] = area
    packages.extend(f"rmqtwin.{area}.{sub}" for sub in find_packages(area))

setup(packages=packages, package_dir=package_dir, include_package_data=True)
