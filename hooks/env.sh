# Sourced by run-hook.sh, run-server.sh and setup-env.sh, before every hook: POSIX sh builtins only, no process.
# In: agentmem_root, the plugin's folder (this checkout). Out: agentmem_version, the version in its pyproject.toml,
# and agentmem_env, where setup-env.sh makes agentmem's own environment for that version:
# ${XDG_DATA_HOME:-~/.local/share}/agentmem-env/<version> (its `ready` file says the environment is complete).
agentmem_version=unknown
if [ -r "$agentmem_root/pyproject.toml" ]; then
    while IFS= read -r agentmem_line; do
        case $agentmem_line in
            'version = "'*) agentmem_version=${agentmem_line#version = \"}; agentmem_version=${agentmem_version%%\"*}
                           break ;;
        esac
    done <"$agentmem_root/pyproject.toml"
fi
agentmem_envs=${XDG_DATA_HOME:-${HOME:-/nonexistent}/.local/share}/agentmem-env
agentmem_env=$agentmem_envs/$agentmem_version
