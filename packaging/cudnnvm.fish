# SPDX-License-Identifier: MIT
# fish completion for cudnnvm: every command and option; installed versions,
# catalogue versions and toolkit CUDA versions are asked of cudnnvm itself
# (with the --root/--store/--manifests/--user given on the line).

# The command word, or nothing while it is still to come.
function __cudnnvm_cmd
    set -l t (commandline -opc)
    set -l i 2
    while test $i -le (count $t)
        switch $t[$i]
            case --root --store --manifests --mirror --lock-timeout
                set i (math $i + 1)
            case '-*'
            case '*'
                echo $t[$i]
                return 0
        end
        set i (math $i + 1)
    end
    return 1
end

function __cudnnvm_needs_cmd
    not __cudnnvm_cmd >/dev/null
end

# __cudnnvm_is CMD...: the command is one of these.
function __cudnnvm_is
    set -l c (__cudnnvm_cmd); or return 1
    contains -- $c $argv
end

# The global options on the line that say which store and root to ask.
function __cudnnvm_globals
    set -l t (commandline -opc)
    set -l i 2
    while test $i -le (count $t)
        switch $t[$i]
            case --root --store --manifests --mirror
                set -l j (math $i + 1)
                if test $j -le (count $t)
                    printf '%s\n' $t[$i] $t[$j]
                end
                set i $j
            case --lock-timeout
                set i (math $i + 1)
            case --user
                echo --user
            case '-*'
            case '*'
                return 0
        end
        set i (math $i + 1)
    end
end

# __cudnnvm_json KEY ARGS...: the string values of KEY in `cudnnvm GLOBALS --json ARGS`.
function __cudnnvm_json
    set -l t (commandline -opc)
    set -l key $argv[1]
    command $t[1] (__cudnnvm_globals) --json $argv[2..-1] 2>/dev/null </dev/null |
        sed -n 's/^ *"'$key'": "\([^"]*\)",\{0,1\}$/\1/p'
end

# The arguments after the command, options and their values left out.
function __cudnnvm_nargs
    set -l t (commandline -opc)
    set -l n 0
    set -l seen 0
    set -l skip 0
    for w in $t[2..-1]
        if test $skip = 1
            set skip 0
            continue
        end
        switch $w
            case --root --store --manifests --mirror --lock-timeout --cuda --archive --sha256 \
                --platform --jobs --connect-timeout --low-speed-time --retries --shell --device \
                --format --default
                set skip 1
            case '-*'
            case '*'
                if test $seen = 0
                    set seen 1
                else
                    set n (math $n + 1)
                end
        end
    end
    echo $n
end

function __cudnnvm_first_arg
    test (__cudnnvm_nargs) = 0; and not contains -- -- (commandline -opc)
end

function __cudnnvm_installed
    begin
        __cudnnvm_json id list
        __cudnnvm_json version list
    end | sort -u
end

function __cudnnvm_available
    set -l t (commandline -opc)
    set -l a list --available
    set -l i (contains -i -- --cuda $t)
    and set -a a --cuda $t[(math $i + 1)]
    begin
        __cudnnvm_json release $a
        __cudnnvm_json version $a
    end | sort -u
end

function __cudnnvm_cudas
    __cudnnvm_json version toolkits | sort -u
end

complete -c cudnnvm -f

# Global options and the commands.
complete -c cudnnvm -n __cudnnvm_needs_cmd -l root -x -a '(__fish_complete_directories)' -d 'alternate filesystem root'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l store -x -a '(__fish_complete_directories)' -d 'the versioned store'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l manifests -x -a '(__fish_complete_directories)' -d 'an extra catalogue folder'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l mirror -x -d 'where archives are fetched from'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l user -d 'the per-user store'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l no-wait -d 'do not wait for the store lock'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l lock-timeout -x -d 'wait at most SEC for the lock'
complete -c cudnnvm -n __cudnnvm_needs_cmd -l help -d usage
complete -c cudnnvm -n __cudnnvm_needs_cmd -l version -d 'the version'
complete -c cudnnvm -l json -d 'machine-readable output'
complete -c cudnnvm -s q -l quiet -d quieter
complete -c cudnnvm -s v -l verbose -d 'more verbose'

complete -c cudnnvm -n __cudnnvm_needs_cmd -a install -d 'install a cuDNN release into the store'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a fetch -d 'download an archive into the cache only'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a mirror -d 'a mirror folder for air-gapped machines'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a update -d 'add the mirror\'s newer release manifests to the catalogue'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a cache -d 'the downloaded archives'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a list -d 'installed versions (--available: the catalogue)'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a verify -d 're-hash installed files against their record'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a uninstall -d 'remove an installed version'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a use -d 'activate an installed version for a CUDA toolkit'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a current -d 'the active version per toolkit'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a rollback -d 're-activate the previous version'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a history -d 'the activation journal'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a env -d 'print the environment that selects a version'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a exec -d 'run a command with a version selected'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a adopt -d 'bring a hand-copied cuDNN under management'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a smoke -d 'the GPU smoke test of what programs load now'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a doctor -d 'every cuDNN copy, which one loads, what is wrong'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a toolkits -d 'the CUDA toolkits found'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a which -d 'the cuDNN library a toolkit\'s programs load'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a ps -d 'running processes that map cuDNN'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a prefix -d 'the folder of an installed version'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a modulefiles -d 'write Lmod/Tcl modulefiles'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a local -d 'pin a version for this folder (.cudnn-version)'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a export -d 'write an installed version as a store bundle'
complete -c cudnnvm -n __cudnnvm_needs_cmd -a help -d 'help for a command'

# --cuda: the CUDA versions of the toolkits found.
complete -c cudnnvm -n '__cudnnvm_is install fetch mirror list verify uninstall use current rollback history env exec adopt smoke export which prefix' \
    -l cuda -x -a '(__cudnnvm_cudas)' -d 'the CUDA toolkit X.Y'
complete -c cudnnvm -n '__cudnnvm_is install fetch mirror list uninstall' -l platform -x \
    -a 'linux-x86_64 linux-sbsa linux-aarch64 linux-ppc64le windows-x86_64 windows-arm64' -d 'the platform'
complete -c cudnnvm -n '__cudnnvm_is install fetch update mirror' -l connect-timeout -x -d 'seconds to connect'
complete -c cudnnvm -n '__cudnnvm_is install fetch update mirror' -l low-speed-time -x -d 'seconds below the speed limit'
complete -c cudnnvm -n '__cudnnvm_is install fetch update mirror' -l retries -x -d 'download attempts'

# install, fetch: catalogue versions; --archive: files.
complete -c cudnnvm -n '__cudnnvm_is install fetch; and __cudnnvm_first_arg' -a '(__cudnnvm_available)'
complete -c cudnnvm -n '__cudnnvm_is install' -l archive -r -F -d 'the archive file'
complete -c cudnnvm -n '__cudnnvm_is install' -l bundle -r -F -d 'a store bundle (file or URL)'
complete -c cudnnvm -n '__cudnnvm_is install' -l prefer-bundles -d "the mirror's bundles/ first"
complete -c cudnnvm -n '__cudnnvm_is install' -l sha256 -x -d "the archive's SHA-256"
complete -c cudnnvm -n '__cudnnvm_is install' -l force -d 'reinstall an installed version'
complete -c cudnnvm -n '__cudnnvm_is install' -l jobs -x -d 'decoder threads'
complete -c cudnnvm -n '__cudnnvm_is install' -l verify-first -d 'hash the whole archive before decoding'
complete -c cudnnvm -n '__cudnnvm_is install update' -l offline -d 'never touch the network'
complete -c cudnnvm -n '__cudnnvm_is install' -l use -d 'activate it afterwards'
complete -c cudnnvm -n '__cudnnvm_is install use' -l for -r -F -d "the version a Python environment's frameworks take"
complete -c cudnnvm -n '__cudnnvm_is doctor' -l python -r -F -d 'a Python environment to check'
complete -c cudnnvm -n '__cudnnvm_is install' -l no-smoke -d 'with --use: skip the smoke test'
complete -c cudnnvm -n '__cudnnvm_is install' -l no-ldconfig -d 'with --use: do not run ldconfig'
complete -c cudnnvm -n '__cudnnvm_is env exec' -l force -d 'even a version whose last smoke test failed'

complete -c cudnnvm -n '__cudnnvm_is cache; and __cudnnvm_first_arg' -a 'list clean'
complete -c cudnnvm -n '__cudnnvm_is cache' -l all -d everything
complete -c cudnnvm -n '__cudnnvm_is list' -l available -d 'the catalogue'

# Installed versions.
complete -c cudnnvm -n '__cudnnvm_is use uninstall env exec prefix verify; and __cudnnvm_first_arg' -a '(__cudnnvm_installed)'
complete -c cudnnvm -n '__cudnnvm_is uninstall' -l force -d 'even while active or mapped'
complete -c cudnnvm -n '__cudnnvm_is use' -l force -d 'also when the toolkit lacks a library it needs'
complete -c cudnnvm -n '__cudnnvm_is use rollback' -l no-smoke -d 'skip the smoke test'
complete -c cudnnvm -n '__cudnnvm_is use rollback adopt' -l no-ldconfig -d 'do not run ldconfig'
complete -c cudnnvm -n '__cudnnvm_is install use rollback uninstall adopt update' -l dry-run -d 'print every change, make none'
complete -c cudnnvm -n '__cudnnvm_is env' -l shell -x -a 'sh bash zsh fish pwsh' -d 'the shell syntax'
complete -c cudnnvm -n '__cudnnvm_is exec; and contains -- -- (commandline -opc)' -a '(__fish_complete_subcommand --fcs-skip=4)'
complete -c cudnnvm -n '__cudnnvm_is smoke' -l no-gpu -d 'the loader part only'
complete -c cudnnvm -n '__cudnnvm_is smoke' -l device -x -d 'the GPU to test'
complete -c cudnnvm -n '__cudnnvm_is smoke' -l all-devices -d 'every GPU'

# modulefiles DIR [--format lua|tcl] [--default ID]
complete -c cudnnvm -n '__cudnnvm_is modulefiles; and __cudnnvm_first_arg' -a '(__fish_complete_directories)'
complete -c cudnnvm -n '__cudnnvm_is modulefiles' -l format -x -a 'lua tcl' -d 'the modulefile language'
complete -c cudnnvm -n '__cudnnvm_is modulefiles' -l default -x -a '(__cudnnvm_installed)' -d 'the default version'

# export VERSION FILE [--cuda X.Y] [--format tar|tar.zst]; local VERSION; help COMMAND
complete -c cudnnvm -n '__cudnnvm_is export; and __cudnnvm_first_arg' -a '(__cudnnvm_installed)'
complete -c cudnnvm -n '__cudnnvm_is export' -l format -x -a 'tar tar.zst' -d 'the bundle format'
complete -c cudnnvm -n '__cudnnvm_is local; and __cudnnvm_first_arg' -a '(__cudnnvm_installed)'
complete -c cudnnvm -n '__cudnnvm_is local' -l unset -d 'remove the pin here'
complete -c cudnnvm -n '__cudnnvm_is help; and __cudnnvm_first_arg' -a 'install fetch update mirror cache list verify uninstall use current rollback history env exec local adopt smoke doctor toolkits export which prefix modulefiles'
