#!/usr/bin/python3
"""A file system that forgets what was not synced, to cut the power under a program.

    lazyfs.py MOUNTPOINT [--seed DIR]

Everything lives in this process's memory, as if in a page cache with a disk
behind it: a write changes the file as read back at once, but only fsync()
(or fdatasync()) of a file makes its contents and size durable. Changes of
directories (files made, linked, renamed, removed) become durable with the
next fsync() of anything, as a journaling file system (ext4, XFS) commits
every metadata change made before the one an fsync() needs. A line "lose" on stdin is the power cut: every file and directory
goes back to its durable state, and "lost" is printed once it has. "mounted"
is printed once the file system answers. With --seed the mount starts with a
copy of DIR, all of it durable. End of stdin unmounts. Jepsen's LazyFS is the
model; this is the little of it a test needs.
"""
import argparse
import errno
import os
import stat
import subprocess
import sys
import threading
import time

from fusepy import FUSE, FuseOSError, Operations

PAGE = 4096


class Node:
    def __init__(self, mode):
        self.mode = mode
        self.mtime = time.time()
        self.links = 1
        if stat.S_ISDIR(mode):
            self.entries, self.durable_entries = {}, {}
        else:
            self.pages, self.size = {}, 0  # current contents: page number -> bytes
            self.durable_pages, self.durable_size = {}, 0
            self.dirty = set()  # pages changed since the last sync

    def is_dir(self):
        return stat.S_ISDIR(self.mode)

    def sync(self):
        if self.is_dir():
            self.durable_entries = dict(self.entries)
            return
        for page in self.dirty:
            if page in self.pages:
                self.durable_pages[page] = self.pages[page]
            else:
                self.durable_pages.pop(page, None)
        self.dirty.clear()
        self.durable_size = self.size

    def lose(self):
        if self.is_dir():
            self.entries = dict(self.durable_entries)
            for child in self.entries.values():
                child.lose()
        else:
            self.pages, self.size, self.dirty = dict(self.durable_pages), self.durable_size, set()

    def read(self, size, offset):
        end = min(offset + size, self.size)
        out = bytearray()
        while offset < end:
            page, at = divmod(offset, PAGE)
            take = min(PAGE - at, end - offset)
            out += self.pages.get(page, bytes(PAGE))[at : at + take]
            offset += take
        return bytes(out)

    def write(self, data, offset):
        done = 0
        while done < len(data):
            page, at = divmod(offset + done, PAGE)
            take = min(PAGE - at, len(data) - done)
            old = bytearray(self.pages.get(page, bytes(PAGE)))
            old[at : at + take] = data[done : done + take]
            self.pages[page] = bytes(old)
            self.dirty.add(page)
            done += take
        self.size = max(self.size, offset + len(data))
        self.mtime = time.time()
        return len(data)

    def truncate(self, length):
        last = (length + PAGE - 1) // PAGE
        for page in [p for p in self.pages if p >= last]:
            del self.pages[page]
            self.dirty.add(page)
        if length % PAGE and (length // PAGE) in self.pages:
            page = length // PAGE
            self.pages[page] = self.pages[page][: length % PAGE] + bytes(PAGE - length % PAGE)
            self.dirty.add(page)
        self.size = length
        self.mtime = time.time()


def seeded(path):
    node = Node(os.lstat(path).st_mode)
    if node.is_dir():
        for name in os.listdir(path):
            node.entries[name] = seeded(os.path.join(path, name))
    else:
        with open(path, "rb") as source:
            node.write(source.read(), 0)
    node.sync()
    return node


class LazyFS(Operations):
    use_ns = True

    def __init__(self, root):
        self.root = root
        self.mutex = threading.RLock()
        self.handles, self.next_handle = {}, 1
        self.changed_dirs = set()  # directories whose entries changed since the last fsync()

    def __call__(self, op, *args):
        with self.mutex:
            return super().__call__(op, *args)

    def init(self, path):
        print("mounted", flush=True)

    def lose(self):
        with self.mutex:
            self.root.lose()
            self.changed_dirs.clear()
            reachable = []
            self._walk(self.root, reachable)
            for node in reachable:
                node.links = 0
            for node in reachable:
                for child in node.entries.values() if node.is_dir() else ():
                    child.links += 1

    def _walk(self, node, into):
        into.append(node)
        for child in node.entries.values() if node.is_dir() else ():
            if child not in into:
                self._walk(child, into)

    def _find(self, path):
        node = self.root
        for name in filter(None, path.split("/")):
            if not node.is_dir() or name not in node.entries:
                raise FuseOSError(errno.ENOENT)
            node = node.entries[name]
        return node

    def _parent(self, path):
        parent, name = os.path.split(path)
        directory = self._find(parent)
        self.changed_dirs.add(directory)
        return directory, name

    def _commit(self, node):
        node.sync()
        for directory in self.changed_dirs:
            directory.sync()
        self.changed_dirs.clear()

    def _node(self, path, fh):
        return self.handles.get(fh) or self._find(path)

    def _open(self, node):
        handle, self.next_handle = self.next_handle, self.next_handle + 1
        self.handles[handle] = node
        return handle

    def getattr(self, path, fh=None):
        node = self._node(path, fh)
        size = 4096 if node.is_dir() else node.size
        ns = int(node.mtime * 1e9)
        return dict(st_mode=node.mode, st_nlink=2 if node.is_dir() else node.links, st_size=size, st_uid=os.getuid(),
                    st_gid=os.getgid(), st_atime=ns, st_mtime=ns, st_ctime=ns, st_blocks=(size + 511) // 512)

    def readdir(self, path, fh):
        return [".", "..", *self._find(path).entries]

    def mkdir(self, path, mode):
        parent, name = self._parent(path)
        if name in parent.entries:
            raise FuseOSError(errno.EEXIST)
        parent.entries[name] = Node(stat.S_IFDIR | mode)

    def rmdir(self, path):
        parent, name = self._parent(path)
        if self._find(path).entries:
            raise FuseOSError(errno.ENOTEMPTY)
        del parent.entries[name]

    def create(self, path, mode, fi=None):
        parent, name = self._parent(path)
        parent.entries[name] = Node(stat.S_IFREG | mode)
        return self._open(parent.entries[name])

    def open(self, path, flags):
        return self._open(self._find(path))

    def release(self, path, fh):
        self.handles.pop(fh, None)

    def read(self, path, size, offset, fh):
        return self._node(path, fh).read(size, offset)

    def write(self, path, data, offset, fh):
        return self._node(path, fh).write(data, offset)

    def truncate(self, path, length, fh=None):
        self._node(path, fh).truncate(length)

    def unlink(self, path):
        parent, name = self._parent(path)
        self._find(path).links -= 1
        del parent.entries[name]

    def link(self, target, source):
        parent, name = self._parent(target)
        if name in parent.entries:
            raise FuseOSError(errno.EEXIST)
        parent.entries[name] = self._find(source)
        parent.entries[name].links += 1

    def rename(self, old, new):
        node = self._find(old)
        old_parent, old_name = self._parent(old)
        new_parent, new_name = self._parent(new)
        del old_parent.entries[old_name]
        if new_name in new_parent.entries:
            new_parent.entries[new_name].links -= 1
        new_parent.entries[new_name] = node

    def fsync(self, path, datasync, fh):
        self._commit(self._node(path, fh))

    def fsyncdir(self, path, datasync, fh):
        self._commit(self._find(path))

    def chmod(self, path, mode):
        node = self._find(path)
        node.mode = stat.S_IFMT(node.mode) | stat.S_IMODE(mode)

    def chown(self, path, uid, gid):
        pass

    def utimens(self, path, times=None):
        self._find(path).mtime = times[1] / 1e9 if times else time.time()

    def flush(self, path, fh):
        pass


def commands(fs, mountpoint):
    for line in sys.stdin:
        if line.strip() == "lose":
            fs.lose()
            print("lost", flush=True)
    subprocess.run(["fusermount", "-u", "-z", mountpoint], check=False)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("mountpoint")
    parser.add_argument("--seed", help="a directory whose copy the mount starts with, all of it durable")
    args = parser.parse_args()
    root = seeded(args.seed) if args.seed else Node(stat.S_IFDIR | 0o755)
    root.sync()
    fs = LazyFS(root)
    threading.Thread(target=commands, args=(fs, args.mountpoint), daemon=True).start()
    # direct_io and no attribute cache: the kernel keeps no copy of its own that a power cut would not reach.
    FUSE(fs, args.mountpoint, foreground=True, nothreads=True, direct_io=True, attr_timeout=0, entry_timeout=0,
         default_permissions=True)


if __name__ == "__main__":
    main()
