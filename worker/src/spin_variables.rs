//! The `fermyon:spin/variables@2.0.0` import, linked to `variables::ComponentVariables`.

use crate::sandbox::Host;
use crate::variables::VariableError;

mod bindings {
    wasmtime::component::bindgen!({
        inline: "
            package fermyon:spin@2.0.0;
            interface variables {
                variant error {
                    invalid-name(string),
                    undefined(string),
                    provider(string),
                    other(string),
                }
                get: func(name: string) -> result<string, error>;
            }
            world spin-variables {
                import variables;
            }
        ",
    });
}

use bindings::fermyon::spin::variables;

impl variables::Host for Host {
    fn get(&mut self, name: String) -> Result<String, variables::Error> {
        self.variables.get(&name).map_err(|e| match e {
            VariableError::InvalidName(m) => variables::Error::InvalidName(m),
            VariableError::Undefined(m) => variables::Error::Undefined(m),
            VariableError::Provider(m) => variables::Error::Provider(m),
        })
    }
}

pub fn add_to_linker(linker: &mut wasmtime::component::Linker<Host>) -> wasmtime::Result<()> {
    variables::add_to_linker::<Host, wasmtime::component::HasSelf<Host>>(linker, |host| host)
}
