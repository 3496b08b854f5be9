// Package deploy holds no code: its tests prove the deployment files beside it. They build the
// .deb packages with nfpm, check them with lintian, run their maintainer scripts, install and
// purge them on the test machine, run systemd-analyze verify on the units, and run the Ansible
// role with ansible-playbook and ansible-lint.
package deploy
