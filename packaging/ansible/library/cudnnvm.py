#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# The Ansible module `cudnnvm`: one cuDNN version present, active or absent on
# a node, through the cudnnvm binary's --json output and exit codes (never its
# human text). Usable with ANSIBLE_LIBRARY, as a role's library/, or copied
# into a collection's plugins/modules/.

from __future__ import absolute_import, division, print_function
__metaclass__ = type

DOCUMENTATION = r'''
---
module: cudnnvm
short_description: Install, activate and remove NVIDIA cuDNN versions with cudnnvm
description:
  - Drives the C(cudnnvm) binary on the managed node through C(--json) and its
    exit codes. Every change goes through cudnnvm's own transactions (verified
    archive, one rename into the store, atomic activation with a smoke test and
    automatic rollback).
  - Idempotent. C(changed) is true only when cudnnvm changed the store or an
    activation.
  - Check mode runs the same commands with C(--dry-run) (C(install), C(use),
    C(uninstall)), which validate and resolve for real and change nothing,
    so a check fails where the real run would (with its message and exit code)
    and C(changes) lists what the real run would change. With an older binary
    that has no C(--dry-run), it decides from read-only queries (C(list),
    C(current)).
version_added: "0.1.0"
options:
  name:
    description: The cuDNN version, as cudnnvm takes it (C(8.9.7), C(8.9.7.29), C(9.1), C(9)).
    type: str
    required: true
  cuda:
    description: The CUDA toolkit (C(11.8), C(12.4)); may be left out where the toolkit is clear.
    type: str
  state:
    description:
      - C(present) installs the version; C(active) installs it and activates it
        for the toolkit; C(absent) uninstalls it (refused while it is active).
    type: str
    choices: [present, active, absent]
    default: present
  archive:
    description: An archive file on the node, instead of the cache or the mirror.
    type: path
  sha256:
    description: The archive's (or bundle's) SHA-256, for archives that no manifest lists.
    type: str
  bundle:
    description: A store bundle (C(cudnnvm export)) file or URL to install from.
    type: str
  mirror:
    description: Where archives are fetched from (C(--mirror)).
    type: str
  manifests:
    description: An extra catalogue folder on the node (C(--manifests)).
    type: path
  root:
    description: Alternate filesystem root (C(--root)).
    type: path
  store:
    description: The store (C(--store)).
    type: path
  user:
    description: The user's own store, activation through the environment only (C(--user)).
    type: bool
    default: false
  smoke:
    description: Run the smoke test when activating (C(false) passes C(--no-smoke)).
    type: bool
    default: true
  force:
    description: Reinstall an installed version, or uninstall an active one (the previous comes back).
    type: bool
    default: false
  binary:
    description: The cudnnvm binary; by default the one on PATH.
    type: path
author:
  - cudnnvm developers
'''

EXAMPLES = r'''
- name: cuDNN 8.9.7 for CUDA 11.8, active, smoke-tested
  cudnnvm:
    name: 8.9.7
    cuda: "11.8"
    state: active

- name: an archive copied to the node, not in any manifest
  cudnnvm:
    name: 9.19.0
    cuda: "13.0"
    archive: /srv/cudnn/cudnn-linux-x86_64-9.19.0.56_cuda13-archive.tar.xz
    sha256: fe6a67bca6996b77aca19a7f8108d5544530699fed6f44ae84f28c6c7a02e367

- name: the old one goes
  cudnnvm:
    name: 8.9.6
    cuda: "11.8"
    state: absent
'''

RETURN = r'''
id:
  description: The store id of the version (C(<full version>-cuda<major>-<platform>)).
  returned: when a version was found or installed
  type: str
  sample: 8.9.7.29-cuda11-linux-x86_64
previous:
  description: The id that was active for the toolkit before (state=active), or null.
  returned: state=active
  type: str
active_for:
  description: The CUDA toolkits the version is active for afterwards.
  returned: always
  type: list
  elements: str
smoke:
  description: The smoke test's result when activation ran one (cudnnvm's JSON), else null.
  returned: state=active
  type: dict
changes:
  description: In check mode, each change cudnnvm's C(--dry-run) says the real run would make
    ("would create link ...", "would write /etc/ld.so.conf.d/...").
  returned: check mode
  type: list
  elements: str
rc:
  description: cudnnvm's exit code of the last command run.
  returned: always
  type: int
'''

import json

from ansible.module_utils.basic import AnsibleModule


class Cudnnvm(object):
    def __init__(self, module):
        self.m = module
        p = module.params
        self.binary = p['binary'] or module.get_bin_path('cudnnvm', required=True)
        g = [self.binary, '--json']
        for opt in ('root', 'store', 'manifests', 'mirror'):
            if p[opt]:
                g += ['--' + opt, p[opt]]
        if p['user']:
            g.append('--user')
        self.globals = g
        self.rc = 0

    def run(self, args, ok=(0,)):
        """cudnnvm ARGS with --json: (rc, document); fails the task outside ok."""
        rc, out, err = self.m.run_command(self.globals + args)
        return self.result(rc, out, err, args, ok)

    def result(self, rc, out, err, args, ok):
        self.rc = rc
        doc = None
        if out.strip():
            try:
                doc = json.loads(out)
            except ValueError:
                self.m.fail_json(msg='cudnnvm printed no JSON document', rc=rc,
                                 stdout=out, stderr=err, cmd=self.globals + args)
        if rc not in ok:
            e = (doc or {}).get('error') or {}
            self.m.fail_json(msg=e.get('message') or err.strip() or 'cudnnvm failed',
                             rc=rc, stderr=err, cmd=self.globals + args)
        return rc, doc or {}

    def cuda_args(self):
        c = self.m.params['cuda']
        return ['--cuda', c] if c else []

    def installed(self):
        _, doc = self.run(['list'] + self.cuda_args())
        return doc.get('installed', [])

    def matching(self):
        """Installed versions that NAME selects (the same prefix rule as cudnnvm)."""
        want = self.m.params['name'].split('.')
        return [v for v in self.installed() if v['version'].split('.')[:len(want)] == want]

    def active_id(self):
        if not self.m.params['cuda']:
            return None
        # current exits 1 with the entry marked "broken" when the active link
        # no longer names a whole version: not active, so state=active repairs it.
        rc, doc = self.run(['current'] + self.cuda_args(), ok=(0, 1))
        if rc == 1 and not doc.get('active'):
            self.run(['current'] + self.cuda_args())
        for a in doc.get('active', []):
            if a.get('cuda') == self.m.params['cuda'] and not a.get('broken'):
                return a.get('id')
        return None

    def active_for(self, vid):
        for v in self.installed():
            if v['id'] == vid:
                return v.get('active_for', [])
        return []

    def install_args(self):
        p = self.m.params
        a = ['install', p['name']] + self.cuda_args()
        for opt in ('archive', 'sha256', 'bundle'):
            if p[opt]:
                a += ['--' + opt, p[opt]]
        if p['force']:
            a.append('--force')
        return a

    def dry_run(self, res, args):
        """cudnnvm ARGS --dry-run: its document (its changes added to res['changes']);
        the task fails where the real run would; None where the binary has no --dry-run."""
        rc, out, err = self.m.run_command(self.globals + args + ['--dry-run'])
        if rc == 2 and '--dry-run' in err:
            return None
        _, doc = self.result(rc, out, err, args + ['--dry-run'], (0,))
        res.setdefault('changes', []).extend(c.get('text') for c in doc.get('changes', []))
        return doc

    def present(self, res):
        if self.m.check_mode:
            doc = self.dry_run(res, self.install_args())
            if doc is not None:
                res['id'] = doc.get('id')
                res['changed'] = not doc.get('already_installed', False)
                res['installed'] = doc.get('already_installed', False)
                return res['id']
            found = self.matching()
            res['changed'] = self.m.params['force'] or not found
            res['id'] = found[-1]['id'] if found else None
            return res['id']
        _, doc = self.run(self.install_args())
        res['id'] = doc.get('id')
        res['changed'] = not doc.get('already_installed', False)
        return res['id']

    def active(self, res):
        vid = self.present(res)
        before = self.active_id()
        res['previous'] = before
        res['smoke'] = None
        if vid is not None and before == vid:
            return
        res['changed'] = True
        a = ['use', vid] + self.cuda_args()
        if not self.m.params['smoke']:
            a.append('--no-smoke')
        if self.m.check_mode:
            # a version the check only plans to install cannot be switched to yet
            if res.pop('installed', True) and vid is not None:
                self.dry_run(res, a)
            return
        _, doc = self.run(a)
        res['previous'] = doc.get('previous', before)
        res['smoke'] = doc.get('smoke')

    def absent(self, res):
        found = self.matching()
        res['changed'] = bool(found)
        res['id'] = found[-1]['id'] if found else None
        for v in found:
            a = ['uninstall', v['id']] + self.cuda_args()
            if self.m.params['force']:
                a.append('--force')
            if not self.m.check_mode:
                self.run(a)
            elif self.dry_run(res, a) is None:
                busy = v.get('active_for')
                if busy and not self.m.params['force']:
                    # what the real run would answer (cudnnvm refuses, exit 1)
                    self.m.fail_json(msg='%s is active for CUDA %s: activate another version '
                                     'first' % (v['id'], ', '.join(busy)), rc=1)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            name=dict(type='str', required=True),
            cuda=dict(type='str'),
            state=dict(type='str', default='present', choices=['present', 'active', 'absent']),
            archive=dict(type='path'),
            sha256=dict(type='str'),
            bundle=dict(type='str'),
            mirror=dict(type='str'),
            manifests=dict(type='path'),
            root=dict(type='path'),
            store=dict(type='path'),
            user=dict(type='bool', default=False),
            smoke=dict(type='bool', default=True),
            force=dict(type='bool', default=False),
            binary=dict(type='path'),
        ),
        mutually_exclusive=[['archive', 'bundle']],
        required_if=[['state', 'active', ['cuda']]],
        supports_check_mode=True,
    )
    c = Cudnnvm(module)
    res = dict(changed=False, id=None)
    getattr(c, module.params['state'])(res)
    res.pop('installed', None)
    res['active_for'] = c.active_for(res['id']) if res['id'] else []
    res['rc'] = c.rc
    module.exit_json(**res)


if __name__ == '__main__':
    main()
